package peering

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
)

// side is one end of the tunnel.
type side struct {
	c      Cluster
	ns     string                // its tenant namespace
	remote corev1beta1.ClusterID // the other end's ID
}

// ensureNetwork connects the two clusters' networks: the provider hosts the server unless
// Gateway.ServerOnConsumer says the consumer does; a tunnel between them with its server on the
// other side (made for the peering in the other direction, or before) is reused as it is.
func (p *pair) ensureNetwork(ctx context.Context) error {
	prov := side{p.provider, p.providerNS(), p.consumerID}
	cons := side{p.consumer, p.consumerNS(), p.providerID}
	server, client := prov, cons
	if p.opts.Gateway.ServerOnConsumer {
		server, client = cons, prov
	}
	if reversed, err := p.serverOn(ctx, client); err != nil {
		return err
	} else if reversed {
		server, client = client, server // an existing tunnel: reuse it as it is
	}
	for _, s := range []struct{ local, remote side }{{prov, cons}, {cons, prov}} {
		if err := p.ensureConfiguration(ctx, s.local, s.remote); err != nil {
			return err
		}
	}
	gws, err := p.ensureServer(ctx, server)
	if err != nil {
		return err
	}
	gwc, err := p.ensureClient(ctx, client, gws)
	if err != nil {
		return err
	}
	if err := p.exchangeKeys(ctx, server, client, gws.Status.SecretRef.Name, gwc.Status.SecretRef.Name); err != nil {
		return err
	}
	for _, s := range []side{server, client} {
		if err := p.waitConnected(ctx, s, server, gws); err != nil {
			return err
		}
	}
	return nil
}

// serverOn tells whether s hosts a gateway server for its peer.
func (p *pair) serverOn(ctx context.Context, s side) (bool, error) {
	_, found, err := gatewayObjectName(ctx, s, &netv1beta1.GatewayServerList{}, "GatewayServer")
	return found, err
}

// gatewayObjectName is the name of the object of list's kind in s's tenant namespace that is
// labelled for s's peer: one made before (by upstream liqoctl, or by an earlier version of this
// package under another name) is kept, the one of upstream's default name first, else the
// oldest. When there is none (found false), it is upstream's default name: the peer's ID.
func gatewayObjectName(ctx context.Context, s side, list client.ObjectList, kind string) (name string, found bool, err error) {
	if err := s.c.Client.List(ctx, list, client.InNamespace(s.ns), client.MatchingLabels{consts.RemoteClusterIDLabel: string(s.remote)}); err != nil {
		return "", false, fmt.Errorf("listing the %ss of %s in %s on %s: %w", kind, s.remote, s.ns, s.c.Name, err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return "", false, fmt.Errorf("reading the %ss of %s in %s on %s: %w", kind, s.remote, s.ns, s.c.Name, err)
	}
	var oldest client.Object
	for _, o := range objs {
		obj, ok := o.(client.Object)
		if !ok {
			continue
		}
		if obj.GetName() == string(s.remote) {
			return obj.GetName(), true, nil
		}
		if oldest == nil || obj.GetCreationTimestamp().Time.Before(oldest.GetCreationTimestamp().Time) {
			oldest = obj
		}
	}
	if oldest != nil {
		return oldest.GetName(), true, nil
	}
	return string(s.remote), false, nil
}

// ensureConfiguration writes, in local's tenant namespace, the Configuration of the remote
// cluster's networks: its own pod CIDRs (at least one) and external CIDR (optional), read from
// its Network objects by package clusternet.
func (p *pair) ensureConfiguration(ctx context.Context, local, remote side) error {
	nets, err := clusternet.ReadIn(ctx, remote.c.Client, remote.c.liqoNamespace())
	if err != nil {
		return fmt.Errorf("reading the networks of %s: %w", remote.c.Name, err)
	}
	if len(nets.PodCIDRs) == 0 {
		return fmt.Errorf("%s has no pod CIDR: %w", remote.c.Name, clusternet.ErrNoPodCIDR)
	}
	conf := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: local.ns, Name: string(local.remote)}}
	return p.write(ctx, local, "Configuration", conf, func() {
		forge.MutateConfiguration(conf, string(local.remote), nets.PodCIDRs, nets.ExternalCIDRs())
	}, "", nil)
}

// write creates obj (a kind object) on s's cluster, or patches it, to what mutate makes of it;
// then, unless ready is nil, it waits until ready says the controllers have answered it, what
// naming that answer in messages.
func (p *pair) write(ctx context.Context, s side, kind string, obj client.Object, mutate func(), what string, ready func() bool) error {
	_, err := controllerutil.CreateOrPatch(ctx, s.c.Client, obj, func() error {
		mutate()
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing %s %s/%s on %s: %w", kind, obj.GetNamespace(), obj.GetName(), s.c.Name, err)
	}
	if ready == nil {
		return nil
	}
	return waitFor(ctx, p.opts.PollInterval, fmt.Sprintf("%s %s/%s on %s to %s", kind, obj.GetNamespace(), obj.GetName(), s.c.Name, what),
		func(ctx context.Context) (bool, error) {
			if err := s.c.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return false, fmt.Errorf("reading %s: %w", kind, err)
			}
			return ready(), nil
		})
}

// ensureServer writes the gateway server and waits for its endpoint and key Secret.
func (p *pair) ensureServer(ctx context.Context, s side) (*netv1beta1.GatewayServer, error) {
	name, _, err := gatewayObjectName(ctx, s, &netv1beta1.GatewayServerList{}, "GatewayServer")
	if err != nil {
		return nil, err
	}
	gw := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
	g := p.opts.Gateway
	o := forge.GatewayServerOptions{MTU: g.MTU, ServiceType: g.ServiceType, Port: g.Port}
	if g.NodePort != 0 {
		o.NodePort = ptr.To(g.NodePort)
	}
	if g.LoadBalancerIP != "" {
		o.LoadBalancerIP = ptr.To(g.LoadBalancerIP)
	}
	what := "report its endpoint"
	if g.ServiceType == corev1.ServiceTypeLoadBalancer {
		what += " (a LoadBalancer Service's address comes from the cluster's load balancer: where there is none, expose the " +
			"gateway with a NodePort Service)"
	}
	refused := false
	err = p.write(ctx, s, "GatewayServer", gw, func() {
		if gw.Spec.ServerTemplateRef.Name == "" { // upstream's operator needs one; ours reads none as the default
			o.TemplateRef = ptr.To(workload.DefaultTemplateRefs(s.c.liqoNamespace())[0])
		}
		forge.MutateGatewayServer(gw, string(s.remote), o)
	}, what,
		func() bool {
			refused = workload.PortRefusal(gw) != ""
			return refused || gw.Status.Endpoint != nil && len(gw.Status.Endpoint.Addresses) > 0 && gw.Status.SecretRef != nil &&
				endpointCurrent(gw.Status.Endpoint, g)
		})
	if err == nil && refused {
		err = serverRefused(ctx, s, gw)
	}
	return gw, err
}

// endpointCurrent tells whether a GatewayServer's endpoint can be the one of its Service as g
// wants it. Right after the gateway parameters change (an update), the status still holds the
// old endpoint until the server's controller has rendered the Service again, and a client given
// that one would dial the old port: the server listens on the new one.
func endpointCurrent(ep *netv1beta1.EndpointStatus, g Gateway) bool {
	port := g.Port
	if port == 0 {
		port = consts.DefaultGatewayPort
	}
	switch {
	case g.ServiceType == corev1.ServiceTypeNodePort && g.NodePort != 0:
		return ep.Port == g.NodePort
	case g.ServiceType == corev1.ServiceTypeNodePort:
		// A node port the cluster picks, not known here; it is not the Service's port (which a
		// stale LoadBalancer or ClusterIP endpoint has), the node-port range being far below the
		// WireGuard ports.
		return ep.Port != port
	case g.ServiceType == corev1.ServiceTypeLoadBalancer || g.ServiceType == corev1.ServiceTypeClusterIP:
		return ep.Port == port // the Service's port
	default: // the template's type: not known here
		return true
	}
}

// ensureClient writes the gateway client towards the server's endpoint and waits for its key
// Secret.
func (p *pair) ensureClient(ctx context.Context, s side, server *netv1beta1.GatewayServer) (*netv1beta1.GatewayClient, error) {
	name, _, err := gatewayObjectName(ctx, s, &netv1beta1.GatewayClientList{}, "GatewayClient")
	if err != nil {
		return nil, err
	}
	gw := &netv1beta1.GatewayClient{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name}}
	endpoint := clientEndpoint(*server.Status.Endpoint, p.opts.Gateway)
	err = p.write(ctx, s, "GatewayClient", gw, func() {
		o := forge.GatewayClientOptions{MTU: p.opts.Gateway.MTU, Endpoint: endpoint}
		if gw.Spec.ClientTemplateRef.Name == "" { // upstream's operator needs one; ours reads none as the default
			o.TemplateRef = ptr.To(workload.DefaultTemplateRefs(s.c.liqoNamespace())[1])
		}
		forge.MutateGatewayClient(gw, string(s.remote), o)
	}, "have its keys", func() bool { return gw.Status.SecretRef != nil && gw.Status.SecretRef.Name != "" })
	return gw, err
}

// clientEndpoint is the endpoint the client dials: the server's, with the address and the port
// g overrides (a server behind NAT).
func clientEndpoint(server netv1beta1.EndpointStatus, g Gateway) netv1beta1.EndpointStatus {
	ep := *server.DeepCopy()
	if g.ClientAddress != "" {
		ep.Addresses = []string{g.ClientAddress}
	}
	if g.ClientPort != 0 {
		ep.Port = g.ClientPort
	}
	return ep
}

// exchangeKeys gives each side a PublicKey holding the other gateway's public key.
func (p *pair) exchangeKeys(ctx context.Context, server, client side, serverSecret, clientSecret string) error {
	for _, s := range []struct {
		from       side
		fromSecret string
		to         side
	}{{server, serverSecret, client}, {client, clientSecret, server}} {
		secret := &corev1.Secret{}
		if err := s.from.c.Client.Get(ctx, clientKey(s.from.ns, s.fromSecret), secret); err != nil {
			return fmt.Errorf("reading the gateway keys %s/%s on %s: %w", s.from.ns, s.fromSecret, s.from.c.Name, err)
		}
		pub := secret.Data[consts.PublicKeySecretKey]
		if len(pub) != 32 {
			return fmt.Errorf("the gateway keys %s/%s on %s have no 32-byte %s", s.from.ns, s.fromSecret, s.from.c.Name, consts.PublicKeySecretKey)
		}
		name, _, err := gatewayObjectName(ctx, s.to, &netv1beta1.PublicKeyList{}, "PublicKey")
		if err != nil {
			return err
		}
		pk := &netv1beta1.PublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: s.to.ns, Name: name}}
		if err := p.write(ctx, s.to, "PublicKey", pk, func() { forge.MutatePublicKey(pk, string(s.to.remote), pub) }, "", nil); err != nil {
			return err
		}
	}
	return nil
}

// waitConnected waits for the side's Connection to be Connected; it fails at once when the
// controller of the server's side (on server, gws) does not run the gateway server.
func (p *pair) waitConnected(ctx context.Context, s, server side, gws *netv1beta1.GatewayServer) error {
	return waitFor(ctx, p.opts.PollInterval, fmt.Sprintf("the tunnel's Connection in %s on %s to be Connected (are the gateways running? "+
		"in the sandbox they run only as root; otherwise set networking = false)", s.ns, s.c.Name),
		func(ctx context.Context) (bool, error) {
			conns := &netv1beta1.ConnectionList{}
			if err := s.c.Client.List(ctx, conns, client.InNamespace(s.ns)); err != nil {
				return false, fmt.Errorf("listing Connections: %w", err)
			}
			for _, c := range conns.Items {
				if c.Status.Value == netv1beta1.Connected {
					return true, nil
				}
			}
			return false, serverRefused(ctx, server, gws)
		})
}

// removeNetwork deletes the gateways, public keys and Configurations on both sides: those
// labelled for the peer, whoever made them.
func (p *pair) removeNetwork(ctx context.Context) error {
	for _, s := range []side{{p.provider, p.providerNS(), p.consumerID}, {p.consumer, p.consumerNS(), p.providerID}} {
		for _, list := range []client.ObjectList{&netv1beta1.GatewayClientList{}, &netv1beta1.GatewayServerList{},
			&netv1beta1.PublicKeyList{}, &netv1beta1.ConfigurationList{}} {
			if err := s.c.Client.List(ctx, list, client.InNamespace(s.ns), client.MatchingLabels{consts.RemoteClusterIDLabel: string(s.remote)}); err != nil {
				return fmt.Errorf("listing the network objects of %s in %s on %s: %w", s.remote, s.ns, s.c.Name, err)
			}
			objs, err := meta.ExtractList(list)
			if err != nil {
				return fmt.Errorf("reading the network objects of %s in %s on %s: %w", s.remote, s.ns, s.c.Name, err)
			}
			for _, o := range objs {
				if obj, ok := o.(client.Object); ok {
					if err := deleteAndWait(ctx, s.c, obj, p.opts.PollInterval); err != nil {
						return err
					}
				}
			}
		}
		// A Configuration written before it was labelled.
		conf := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: string(s.remote)}}
		if err := deleteAndWait(ctx, s.c, conf, p.opts.PollInterval); err != nil {
			return err
		}
	}
	return nil
}

func clientKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
