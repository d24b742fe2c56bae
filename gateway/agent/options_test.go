package agent

import (
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// TestWithDefaultsFillsEmptyOptions: empty options get their documented defaults, derived
// from the mode, namespace and gateway name where they say so.
func TestWithDefaultsFillsEmptyOptions(t *testing.T) {
	o, err := Options{Mode: ModeClient, Namespace: "liqo-tenant-a", GatewayName: "gw"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.ConnectionName != "gw" {
		t.Errorf("ConnectionName = %q, want the gateway name gw", o.ConnectionName)
	}
	if want := InterfaceName(ModeClient, "liqo-tenant-a", "gw"); o.Interface != want {
		t.Errorf("Interface = %q, want %q", o.Interface, want)
	}
	if o.TunnelCIDR != DefaultTunnelCIDR {
		t.Errorf("TunnelCIDR = %q, want %q", o.TunnelCIDR, DefaultTunnelCIDR)
	}
	if o.RouteTable < 1000 || o.RouteTable >= 31000 {
		t.Errorf("RouteTable = %d, want one in [1000, 31000)", o.RouteTable)
	}
	if o.ProbeInterval != 500*time.Millisecond || o.Keepalive != 10*time.Second {
		t.Errorf("ProbeInterval %s, Keepalive %s: want 500ms and 10s", o.ProbeInterval, o.Keepalive)
	}
	// The route table derives from the interface name only: same name, same table.
	again, err := Options{Mode: ModeServer, Namespace: "other", GatewayName: "other", Interface: o.Interface}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if again.RouteTable != o.RouteTable {
		t.Errorf("route table %d for interface %s, then %d", o.RouteTable, o.Interface, again.RouteTable)
	}
	other, err := Options{Mode: ModeClient, Namespace: "liqo-tenant-b", GatewayName: "gw"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if other.RouteTable == o.RouteTable {
		t.Errorf("interfaces %s and %s got the same route table %d", o.Interface, other.Interface, o.RouteTable)
	}
}

// TestWithDefaultsKeepsGivenOptions: options that are set stay as they are.
func TestWithDefaultsKeepsGivenOptions(t *testing.T) {
	in := Options{Mode: ModeServer, Namespace: "ns", GatewayName: "gw", SecretName: "keys", PublicKeyName: "pk",
		ConfigurationName: "conf", ConnectionName: "conn", Interface: "wg-test", TunnelCIDR: "10.255.0.8/29",
		RouteTable: 77, ProbeInterval: time.Second, Keepalive: 3 * time.Second, LiqoNamespace: "liqo-system"}
	got, err := in.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got != in {
		t.Errorf("withDefaults changed set options:\n got %+v\nwant %+v", got, in)
	}
}

// TestWithDefaultsRejects: a bad mode, missing names, a long interface name and a tunnel CIDR
// that is not IPv4 are refused, with the offending value in the message.
func TestWithDefaultsRejects(t *testing.T) {
	valid := Options{Mode: ModeServer, Namespace: "ns", GatewayName: "gw"}
	for _, c := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no mode", func(o *Options) { o.Mode = "" }, `mode ""`},
		{"unknown mode", func(o *Options) { o.Mode = "relay" }, `mode "relay": must be "server" or "client"`},
		{"no namespace", func(o *Options) { o.Namespace = "" }, "namespace and the gateway name are required"},
		{"no gateway", func(o *Options) { o.GatewayName = "" }, "namespace and the gateway name are required"},
		{"long interface", func(o *Options) { o.Interface = "a-very-long-name" }, `interface name "a-very-long-name" is longer than 15`},
		{"CIDR not parsed", func(o *Options) { o.TunnelCIDR = "169.254.18.0" }, `tunnel CIDR "169.254.18.0": not an IPv4 network`},
		{"IPv6 CIDR", func(o *Options) { o.TunnelCIDR = "fd00::/64" }, `tunnel CIDR "fd00::/64": not an IPv4 network`},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := valid
			c.edit(&o)
			_, err := o.withDefaults()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("withDefaults() error = %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := valid.withDefaults(); err != nil {
		t.Errorf("the valid options are refused: %v", err)
	}
	long := valid
	long.Interface = "fifteen-chars-x"
	if _, err := long.withDefaults(); err != nil {
		t.Errorf("a 15-character interface name is refused: %v", err)
	}
}

// TestInterfaceName: "lqs-" or "lqc-" and 8 hex digits, a kernel-valid name that differs per
// mode, namespace and gateway.
func TestInterfaceName(t *testing.T) {
	srv := InterfaceName(ModeServer, "liqo-tenant-a", "gw")
	cli := InterfaceName(ModeClient, "liqo-tenant-a", "gw")
	for name, re := range map[string]string{srv: `^lqs-[0-9a-f]{8}$`, cli: `^lqc-[0-9a-f]{8}$`} {
		if !regexp.MustCompile(re).MatchString(name) {
			t.Errorf("interface name %q does not match %s", name, re)
		}
	}
	if srv[4:] != cli[4:] {
		t.Errorf("the hash of %s and %s differ: it should depend on namespace and name only", srv, cli)
	}
	if InterfaceName(ModeServer, "liqo-tenant-a", "gw") != srv {
		t.Error("InterfaceName is not stable")
	}
	seen := map[string]string{srv: "liqo-tenant-a/gw"}
	for _, nn := range [][2]string{{"liqo-tenant-b", "gw"}, {"liqo-tenant-a", "gw2"}, {"liqo-tenant-a/g", "w"}} {
		name := InterfaceName(ModeServer, nn[0], nn[1])
		if prev, dup := seen[name]; dup {
			t.Errorf("%s/%s and %s share the interface name %s", nn[0], nn[1], prev, name)
		}
		seen[name] = nn[0] + "/" + nn[1]
	}
}

// TestTunnelAddrs: the server takes the first host of the tunnel network and the client the
// second, with the network's mask; a network without two hosts is refused.
func TestTunnelAddrs(t *testing.T) {
	for _, c := range []struct {
		cidr, server, client string
	}{
		{DefaultTunnelCIDR, "169.254.18.1/30", "169.254.18.2/30"},
		{"10.9.8.16/28", "10.9.8.17/28", "10.9.8.18/28"},
		{"10.9.8.19/28", "10.9.8.17/28", "10.9.8.18/28"}, // host bits ignored
	} {
		s, cl, err := tunnelAddrs(c.cidr)
		if err != nil {
			t.Errorf("tunnelAddrs(%s): %v", c.cidr, err)
			continue
		}
		if s.String() != c.server || cl.String() != c.client {
			t.Errorf("tunnelAddrs(%s) = %s, %s; want %s, %s", c.cidr, s, cl, c.server, c.client)
		}
		if len(s.IP) != net.IPv4len || len(cl.IP) != net.IPv4len {
			t.Errorf("tunnelAddrs(%s): addresses %d and %d bytes long, want 4", c.cidr, len(s.IP), len(cl.IP))
		}
	}
	for _, bad := range []string{"10.0.0.0/31", "10.0.0.0/32", "not-a-cidr"} {
		if s, c, err := tunnelAddrs(bad); err == nil {
			t.Errorf("tunnelAddrs(%s) = %s, %s; want an error", bad, s, c)
		}
	}
}

// TestNew: New checks the options and gives each end its own tunnel address and the other's
// as the peer's, without contacting the API server.
func TestNew(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"} // nothing listens there: New must not dial
	for _, c := range []struct {
		mode        Mode
		local, peer string
	}{{ModeServer, "10.9.8.1/30", "10.9.8.2/30"}, {ModeClient, "10.9.8.2/30", "10.9.8.1/30"}} {
		a, err := New(cfg, Options{Mode: c.mode, Namespace: "ns", GatewayName: "gw", TunnelCIDR: "10.9.8.0/30"}, logr.Discard())
		if err != nil {
			t.Fatalf("New(%s): %v", c.mode, err)
		}
		if a.localAddr.String() != c.local || a.peerAddr.String() != c.peer {
			t.Errorf("%s: local %s, peer %s; want %s, %s", c.mode, a.localAddr, a.peerAddr, c.local, c.peer)
		}
		if want := InterfaceName(c.mode, "ns", "gw"); a.Interface() != want {
			t.Errorf("%s: Interface() = %q, want %q", c.mode, a.Interface(), want)
		}
		if a.opts.ConnectionName != "gw" || a.reader == nil || a.writer == nil || a.cache == nil {
			t.Errorf("%s: agent not fully prepared: options %+v", c.mode, a.opts)
		}
	}
	if _, err := New(cfg, Options{Mode: ModeServer, Namespace: "ns"}, logr.Discard()); err == nil {
		t.Error("New accepted options without a gateway name")
	}
	if _, err := New(cfg, Options{Mode: ModeServer, Namespace: "ns", GatewayName: "gw", TunnelCIDR: "10.9.8.0/31"}, logr.Discard()); err == nil ||
		!strings.Contains(err.Error(), "too small") {
		t.Errorf("New with a /31 tunnel: error %v, want one saying it is too small", err)
	}
}
