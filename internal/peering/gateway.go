package peering

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
)

// serverRefused reads GatewayServer gw again on s and, when its controller does not run its
// gateway (another GatewayServer of that cluster uses its UDP port: workload.PortRefusal),
// returns an error that ends the wait at once, with the controller's reason and the fix.
func serverRefused(ctx context.Context, s side, gw *netv1beta1.GatewayServer) error {
	cur := &netv1beta1.GatewayServer{}
	if err := s.c.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur); err != nil {
		return fmt.Errorf("reading GatewayServer %s/%s on %s: %w", gw.Namespace, gw.Name, s.c.Name, err)
	}
	why := workload.PortRefusal(cur)
	if why == "" {
		return nil
	}
	fix := fmt.Sprintf("give this peering's gateway a port no other GatewayServer of %s uses (gateway.port)", s.c.Name)
	if free, err := workload.FreePort(ctx, s.c.Client, workload.ListenPort(cur)); err == nil && free != 0 {
		fix = fmt.Sprintf("set gateway.port = %d (or another port no GatewayServer of %s uses) in this peering", free, s.c.Name)
	}
	return stop("the gateway server of this peering does not run: GatewayServer %s/%s on %s: %s. Fix: %s",
		cur.Namespace, cur.Name, s.c.Name, why, fix)
}

// Tunnel is a peering's network tunnel as found in the clusters.
type Tunnel struct {
	// Gateway are its parameters, as a Peer with them would have made it: the server's side,
	// Service type, port, node port and load balancer IP and the MTU from the GatewayServer, and
	// the client's address and port where the GatewayClient dials another endpoint than the
	// one the server reports. For a tunnel the other direction's peering made (Shared), the
	// server's side as that one declared it (see observeTunnel).
	Gateway
	// Shared tells that the peering in the other direction exists: the tunnel serves both.
	Shared bool
	// ClientKnown tells that ClientAddress and ClientPort were read: the server reports its
	// endpoint, and the GatewayClient exists. DialedAddresses and DialedPort are then the
	// endpoint the GatewayClient dials.
	ClientKnown     bool
	DialedAddresses []string
	DialedPort      int32
}

// observeTunnel reads the peering's tunnel into st (ServerOnConsumer, and Tunnel unless there
// is none). In a bidirectional peering both directions share one tunnel, made by the first of
// them with its gateway settings, which the other is to have too: its server's side is read
// as the direction that made it declared it, that direction being the one whose Tenant came
// first (when the two came in the same second, the default: Provider).
func (p *pair) observeTunnel(ctx context.Context, st *State) error {
	cons := side{p.consumer, p.consumerNS(), p.providerID}
	prov := side{p.provider, p.providerNS(), p.consumerID}
	server := func(s side) (*netv1beta1.GatewayServer, error) {
		return gatewayObject(ctx, s, &netv1beta1.GatewayServerList{}, &netv1beta1.GatewayServer{}, "GatewayServer")
	}
	dialer := cons
	gws, err := server(cons)
	switch {
	case err != nil:
		return err
	case gws != nil:
		st.ServerOnConsumer, dialer = true, prov
	default:
		if gws, err = server(prov); err != nil || gws == nil {
			return err
		}
	}
	ep := gws.Spec.Endpoint
	t := &Tunnel{Gateway: Gateway{ServerOnConsumer: st.ServerOnConsumer, ServiceType: ep.ServiceType, Port: workload.ListenPort(gws),
		MTU: gws.Spec.MTU}}
	switch {
	case ep.NodePort != nil && *ep.NodePort != 0:
		t.NodePort = *ep.NodePort
	case len(ep.NodePorts) > 0:
		t.NodePort = ep.NodePorts[0]
	}
	if ep.LoadBalancerIP != nil {
		t.LoadBalancerIP = *ep.LoadBalancerIP
	}
	gwc, err := gatewayObject(ctx, dialer, &netv1beta1.GatewayClientList{}, &netv1beta1.GatewayClient{}, "GatewayClient")
	if err != nil {
		return err
	}
	if gwc != nil && gws.Status.Endpoint != nil {
		t.ClientKnown, t.DialedAddresses, t.DialedPort = true, gwc.Spec.Endpoint.Addresses, gwc.Spec.Endpoint.Port
		t.ClientAddress, t.ClientPort = clientOverrides(*gws.Status.Endpoint, gwc.Spec.Endpoint)
	}
	if t.Shared, err = p.reverseExists(ctx); err != nil {
		return err
	}
	if t.Shared {
		if t.ServerOnConsumer, err = p.sharedServerOnConsumer(ctx, st.ServerOnConsumer); err != nil {
			return err
		}
	}
	st.Tunnel = t
	return nil
}

// clientOverrides are the address and port the client dials instead of the server's endpoint
// (clientEndpoint's overrides): its single address when the server does not report it, and its
// port when another.
func clientOverrides(server, dialed netv1beta1.EndpointStatus) (address string, port int32) {
	if len(dialed.Addresses) == 1 && !slices.Contains(server.Addresses, dialed.Addresses[0]) {
		address = dialed.Addresses[0]
	}
	if dialed.Port != server.Port {
		port = dialed.Port
	}
	return address, port
}

// sharedServerOnConsumer is the server's side of a tunnel shared by both directions as the
// direction that made it declared it (see observeTunnel); onConsumer says where it is as seen
// from this direction.
func (p *pair) sharedServerOnConsumer(ctx context.Context, onConsumer bool) (bool, error) {
	mine, theirs := &authv1beta1.Tenant{}, &authv1beta1.Tenant{}
	if err := p.provider.Client.Get(ctx, clientKey(p.providerNS(), string(p.consumerID)), mine); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("reading the Tenant of %s on %s: %w", p.consumerID, p.provider.Name, err)
	}
	if err := p.consumer.Client.Get(ctx, clientKey(p.consumerNS(), string(p.providerID)), theirs); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("reading the Tenant of %s on %s: %w", p.providerID, p.consumer.Name, err)
	}
	a, b := mine.CreationTimestamp, theirs.CreationTimestamp
	switch {
	case !a.IsZero() && (b.IsZero() || a.Before(&b)):
		return onConsumer, nil // made by this direction
	case !b.IsZero() && (a.IsZero() || b.Before(&a)):
		// Made by the other: its provider is this one's consumer, so the side it declared is
		// the other one.
		return !onConsumer, nil
	default:
		return false, nil
	}
}

// gatewayObject reads the object of list's kind in s's tenant namespace that is s's peer's
// (gatewayObjectName) into obj; nil when there is none.
func gatewayObject[T client.Object](ctx context.Context, s side, list client.ObjectList, obj T, kind string) (T, error) {
	var none T
	name, found, err := gatewayObjectName(ctx, s, list, kind)
	if err != nil || !found {
		return none, err
	}
	if err := s.c.Client.Get(ctx, clientKey(s.ns, name), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return none, nil
		}
		return none, fmt.Errorf("reading %s %s/%s on %s: %w", kind, s.ns, name, s.c.Name, err)
	}
	return obj, nil
}
