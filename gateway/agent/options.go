// Package agent is the gateway's brain: it watches the peering's objects in the tenant namespace
// (GatewayServer or GatewayClient, the key Secret, the peer's PublicKey and the Configuration)
// and the ipam.liqo.io IPs of the Liqo namespace (local addresses it exposes to the peer under
// the external CIDR's), drives the tunnel, addresses, routes and NAT rules to match them,
// follows their changes live, probes the tunnel and writes the Connection.
package agent

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/mode"
)

// Mode says which end of the tunnel the gateway is (internal/gateway/mode, which the packages that
// must build on every OS import).
type Mode = mode.Mode

const (
	// ModeServer listens for the remote client; it reads a GatewayServer.
	ModeServer = mode.Server
	// ModeClient connects to the remote server; it reads a GatewayClient.
	ModeClient = mode.Client
)

// DefaultTunnelCIDR holds the two tunnel addresses: the server takes the first host, the client
// the second. It is link-local and only ever used inside the tunnel.
const DefaultTunnelCIDR = "169.254.18.0/30"

// Options say which objects a gateway follows and how it names what it creates.
type Options struct {
	// Mode is server or client.
	Mode Mode
	// Namespace is the tenant namespace holding the objects.
	Namespace string
	// LiqoNamespace is the namespace Liqo is installed in, whose ipam.liqo.io IPs (a local
	// address and the external CIDR's address the peer reaches it at) the gateway translates;
	// empty: consts.LiqoNamespace.
	LiqoNamespace string
	// GatewayName names the GatewayServer (server) or GatewayClient (client).
	GatewayName string
	// SecretName overrides the key Secret named by the gateway object.
	SecretName string
	// PublicKeyName names the peer's PublicKey; empty: the only one in the namespace.
	PublicKeyName string
	// ConfigurationName names the Configuration; empty: the only one in the namespace.
	ConfigurationName string
	// ConnectionName names the Connection the gateway writes; empty: GatewayName.
	ConnectionName string
	// Interface is the tunnel interface name (at most 15 characters, unique on the host: the UAPI
	// socket path is shared by every network namespace); empty: derived from the namespace,
	// mode and gateway name.
	Interface string
	// TunnelCIDR holds the two tunnel addresses; empty: DefaultTunnelCIDR.
	TunnelCIDR string
	// RouteTable is the policy-routing table (and fwmark) that gateways before the stateless
	// remap (see package nat) routed remapped traffic with: their rule is removed at start;
	// zero: derived from the interface name.
	RouteTable int
	// ProbeInterval is how often the tunnel is probed; zero: 500 ms.
	ProbeInterval time.Duration
	// Keepalive is WireGuard's persistent keepalive; zero: 10 s.
	Keepalive time.Duration
}

// withDefaults fills the empty options and checks the others.
func (o Options) withDefaults() (Options, error) {
	if o.Mode != ModeServer && o.Mode != ModeClient {
		return o, fmt.Errorf("mode %q: must be %q or %q", o.Mode, ModeServer, ModeClient)
	}
	if o.Namespace == "" || o.GatewayName == "" {
		return o, errors.New("the tenant namespace and the gateway name are required")
	}
	o.LiqoNamespace = consts.LiqoNamespaceOr(o.LiqoNamespace)
	if o.ConnectionName == "" {
		o.ConnectionName = o.GatewayName
	}
	if o.Interface == "" {
		o.Interface = InterfaceName(o.Mode, o.Namespace, o.GatewayName)
	}
	if len(o.Interface) > 15 {
		return o, fmt.Errorf("interface name %q is longer than 15 characters", o.Interface)
	}
	if o.TunnelCIDR == "" {
		o.TunnelCIDR = DefaultTunnelCIDR
	}
	if _, n, err := net.ParseCIDR(o.TunnelCIDR); err != nil || n.IP.To4() == nil {
		return o, fmt.Errorf("tunnel CIDR %q: not an IPv4 network", o.TunnelCIDR)
	}
	if o.RouteTable == 0 {
		h := fnv.New32a()
		_, _ = h.Write([]byte(o.Interface))
		o.RouteTable = 1000 + int(h.Sum32()%30000)
	}
	if o.ProbeInterval == 0 {
		o.ProbeInterval = 500 * time.Millisecond
	}
	if o.Keepalive == 0 {
		o.Keepalive = 10 * time.Second
	}
	return o, nil
}

// InterfaceName derives a tunnel interface name, unique per peering, from the gateway's mode,
// namespace and name: "lqs-" or "lqc-" and 8 hex digits.
func InterfaceName(mode Mode, namespace, name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace + "/" + name))
	return fmt.Sprintf("lq%c-%08x", mode[0], h.Sum32())
}

// tunnelAddrs returns the server's and the client's tunnel addresses, with the tunnel's mask.
func tunnelAddrs(cidr string) (server, client *net.IPNet, err error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing tunnel CIDR %q: %w", cidr, err)
	}
	base := n.IP.To4()
	s := net.IPv4(base[0], base[1], base[2], base[3]+1).To4()
	c := net.IPv4(base[0], base[1], base[2], base[3]+2).To4()
	if !n.Contains(c) {
		return nil, nil, fmt.Errorf("tunnel CIDR %q is too small for two addresses", cidr)
	}
	return &net.IPNet{IP: s, Mask: n.Mask}, &net.IPNet{IP: c, Mask: n.Mask}, nil
}
