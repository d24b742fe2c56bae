package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/gateway/nat"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/remap"
)

// desired is what the objects ask the gateway to be.
type desired struct {
	gateway    client.Object
	privateKey wgtypes.Key
	peerKey    wgtypes.Key
	listenPort int
	endpoint   *net.UDPAddr // client only
	mtu        int          // 0: from the underlay
	remote     []nat.Remap  // Real == Mapped when not remapped
	// externalIPs are the Liqo namespace's IPs with both addresses, by name.
	externalIPs []nat.ExternalIP
}

// errWaiting marks a state that resolves itself once an object shows up.
var errWaiting = errors.New("waiting")

// readDesired reads the objects from r (the cache) and computes the desired state.
func (a *Agent) readDesired(ctx context.Context) (*desired, error) {
	d := &desired{}
	var secretName string
	key := client.ObjectKey{Namespace: a.opts.Namespace, Name: a.opts.GatewayName}
	switch a.opts.Mode {
	case ModeServer:
		gw := &netv1beta1.GatewayServer{}
		if err := a.reader.Get(ctx, key, gw); err != nil {
			return nil, fmt.Errorf("%w for GatewayServer %s: %w", errWaiting, key, err)
		}
		d.gateway, d.mtu, secretName = gw, gw.Spec.MTU, gw.Spec.SecretRef.Name
		if secretName == "" && gw.Status.SecretRef != nil {
			secretName = gw.Status.SecretRef.Name
		}
		d.listenPort = firstPort(gw.Spec.Endpoint.Port, gw.Spec.Endpoint.Ports, consts.DefaultGatewayPort)
	case ModeClient:
		gw := &netv1beta1.GatewayClient{}
		if err := a.reader.Get(ctx, key, gw); err != nil {
			return nil, fmt.Errorf("%w for GatewayClient %s: %w", errWaiting, key, err)
		}
		d.gateway, d.mtu, secretName = gw, gw.Spec.MTU, gw.Spec.SecretRef.Name
		if secretName == "" && gw.Status.SecretRef != nil {
			secretName = gw.Status.SecretRef.Name
		}
		ep, err := resolveEndpoint(ctx, gw.Spec.Endpoint)
		if err != nil {
			return nil, err
		}
		d.endpoint = ep
	}
	if a.opts.SecretName != "" {
		secretName = a.opts.SecretName
	}
	if secretName == "" {
		return nil, fmt.Errorf("%w for the gateway's key Secret to be named in its spec or status", errWaiting)
	}
	secret := &corev1.Secret{}
	if err := a.reader.Get(ctx, client.ObjectKey{Namespace: a.opts.Namespace, Name: secretName}, secret); err != nil {
		return nil, fmt.Errorf("%w for key Secret %s: %w", errWaiting, secretName, err)
	}
	pk, err := parseKey(secret.Data[consts.PrivateKeySecretKey])
	if err != nil {
		return nil, fmt.Errorf("key Secret %s, field %s: %w", secretName, consts.PrivateKeySecretKey, err)
	}
	d.privateKey = pk

	peer, err := a.peerPublicKey(ctx)
	if err != nil {
		return nil, err
	}
	if d.peerKey, err = parseKey(peer.Spec.PublicKey); err != nil {
		return nil, fmt.Errorf("PublicKey %s: %w", peer.Name, err)
	}

	conf, err := a.configuration(ctx)
	if err != nil {
		return nil, err
	}
	if d.remote, err = remoteNetworks(conf); err != nil {
		return nil, err
	}
	if d.externalIPs, err = a.externalIPs(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// externalIPs reads the IPs of the Liqo namespace that the gateway translates: those whose
// spec.ip and status.ip are both set (the IPAM controller writes status.ip when it allocated
// one), in the order of their names. An IP whose addresses do not parse is skipped and logged
// (the CRD validates both; one broken object must not stop the tunnel).
func (a *Agent) externalIPs(ctx context.Context) ([]nat.ExternalIP, error) {
	list := &ipamv1alpha1.IPList{}
	if err := a.ips.List(ctx, list, client.InNamespace(a.opts.LiqoNamespace)); err != nil {
		return nil, fmt.Errorf("listing the IPs of namespace %s: %w", a.opts.LiqoNamespace, err)
	}
	slices.SortFunc(list.Items, func(x, y ipamv1alpha1.IP) int { return strings.Compare(x.Name, y.Name) })
	var out []nat.ExternalIP
	for _, ip := range list.Items {
		if ip.Spec.IP == "" || ip.Status.IP == "" || ip.DeletionTimestamp != nil {
			continue
		}
		local, external := net.ParseIP(string(ip.Spec.IP)).To4(), net.ParseIP(string(ip.Status.IP)).To4()
		if local == nil || external == nil {
			a.log.V(1).Info("IP skipped: spec.ip and status.ip must be IPv4 addresses", "ip", ip.Namespace+"/"+ip.Name,
				"spec.ip", string(ip.Spec.IP), "status.ip", string(ip.Status.IP))
			continue
		}
		out = append(out, nat.ExternalIP{Local: local, External: external})
	}
	return out, nil
}

func (a *Agent) peerPublicKey(ctx context.Context) (*netv1beta1.PublicKey, error) {
	return namedOrOnly[netv1beta1.PublicKey](ctx, a, a.opts.PublicKeyName, &netv1beta1.PublicKeyList{}, "PublicKey", "--public-key")
}

func (a *Agent) configuration(ctx context.Context) (*netv1beta1.Configuration, error) {
	return namedOrOnly[netv1beta1.Configuration](ctx, a, a.opts.ConfigurationName, &netv1beta1.ConfigurationList{}, "Configuration", "--configuration")
}

// namedOrOnly reads the object of kind kind in the tenant namespace: the one named name, or,
// when name is empty, the only one there (listed into list); until there is one, an error
// wrapping errWaiting that names flag, the option that picks one among several.
func namedOrOnly[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, a *Agent, name string, list client.ObjectList, kind, flag string) (PT, error) {
	if name != "" {
		obj := PT(new(T))
		if err := a.reader.Get(ctx, client.ObjectKey{Namespace: a.opts.Namespace, Name: name}, obj); err != nil {
			return nil, fmt.Errorf("%w for %s %s: %w", errWaiting, kind, name, err)
		}
		return obj, nil
	}
	if err := a.reader.List(ctx, list, client.InNamespace(a.opts.Namespace)); err != nil {
		return nil, fmt.Errorf("listing %ss: %w", kind, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("reading the %ss: %w", kind, err)
	}
	if len(items) != 1 {
		return nil, fmt.Errorf("%w for exactly one %s in %s (found %d; name one with %s)", errWaiting, kind, a.opts.Namespace, len(items), flag)
	}
	obj, ok := items[0].(PT)
	if !ok {
		return nil, fmt.Errorf("listing %ss gave a %T", kind, items[0])
	}
	return obj, nil
}

// remoteNetworks pairs the remote cluster's networks (spec) with how the local cluster sees them
// (status, when the Configuration controller remapped them).
func remoteNetworks(c *netv1beta1.Configuration) ([]nat.Remap, error) {
	out, err := remap.FromConfiguration(c)
	if err != nil {
		return nil, fmt.Errorf("reading the remote networks: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w for Configuration %s to declare the remote CIDRs", errWaiting, c.Name)
	}
	return out, nil
}

// parseKey accepts a raw 32-byte key or its base64 text.
func parseKey(b []byte) (wgtypes.Key, error) {
	switch len(b) {
	case wgtypes.KeyLen:
		k, err := wgtypes.NewKey(b)
		if err != nil {
			return wgtypes.Key{}, fmt.Errorf("parsing key: %w", err)
		}
		return k, nil
	case base64.StdEncoding.EncodedLen(wgtypes.KeyLen):
		k, err := wgtypes.ParseKey(string(b))
		if err != nil {
			return wgtypes.Key{}, fmt.Errorf("parsing base64 key: %w", err)
		}
		return k, nil
	default:
		return wgtypes.Key{}, fmt.Errorf("%w: a key is 32 bytes, got %d", errWaiting, len(b))
	}
}

func firstPort(port int32, ports []int32, def int) int {
	if port != 0 {
		return int(port)
	}
	if len(ports) > 0 {
		return int(ports[0])
	}
	return def
}

// resolveEndpoint turns the GatewayClient's endpoint into a UDP address (the first address that
// resolves).
func resolveEndpoint(ctx context.Context, ep netv1beta1.EndpointStatus) (*net.UDPAddr, error) {
	if ep.Protocol != nil && *ep.Protocol != corev1.ProtocolUDP {
		return nil, fmt.Errorf("endpoint protocol %s: WireGuard runs on UDP only", *ep.Protocol)
	}
	port := firstPort(ep.Port, ep.Ports, 0)
	if len(ep.Addresses) == 0 || port == 0 {
		return nil, fmt.Errorf("%w for the GatewayClient's endpoint address and port", errWaiting)
	}
	var errs []error
	for _, host := range ep.Addresses {
		addr, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, a := range addr {
			if a.IP.To4() != nil {
				return &net.UDPAddr{IP: a.IP.To4(), Port: port}, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s has no IPv4 address", host))
	}
	return nil, fmt.Errorf("resolving endpoint %v port %s: %w", ep.Addresses, strconv.Itoa(port), errors.Join(errs...))
}
