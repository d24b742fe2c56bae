package agent

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/peerkit/terraform-provider-liqo/gateway/nat"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// planAgent is an agent of mode with the default tunnel addresses.
func planAgent(t *testing.T, mode Mode) *Agent {
	t.Helper()
	a, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, Options{Mode: mode, Namespace: "ns", GatewayName: "gw", Keepalive: 7 * time.Second}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func ipNets(ns []net.IPNet) []string {
	out := make([]string, len(ns))
	for i := range ns {
		out[i] = ns[i].String()
	}
	return out
}

// TestPlan: WireGuard accepts the peer's tunnel address and the remote networks as the remote
// cluster uses them; the routes go to the networks as the local cluster sees them; only the
// remapped networks get NAT rules.
func TestPlan(t *testing.T) {
	d := &desired{remote: []nat.Remap{
		{Real: cidr(t, "10.1.0.0/16"), Mapped: cidr(t, "10.71.0.0/16")},
		{Real: cidr(t, "10.2.0.0/16"), Mapped: cidr(t, "10.2.0.0/16")},
		{Real: cidr(t, "192.168.5.0/24"), Mapped: cidr(t, "10.72.5.0/24")},
	}}
	for _, c := range []struct {
		mode Mode
		peer string
	}{{ModeServer, "169.254.18.2/32"}, {ModeClient, "169.254.18.1/32"}} {
		p := planAgent(t, c.mode).plan(d)
		if want := []string{c.peer, "10.1.0.0/16", "10.2.0.0/16", "192.168.5.0/24"}; !slices.Equal(ipNets(p.allowed), want) {
			t.Errorf("%s: allowed IPs %v, want %v", c.mode, ipNets(p.allowed), want)
		}
		if want := []string{"10.71.0.0/16", "10.2.0.0/16", "10.72.5.0/24"}; !slices.Equal(ipNets(p.routes), want) {
			t.Errorf("%s: routes %v, want %v", c.mode, ipNets(p.routes), want)
		}
		if len(p.remaps) != 2 || p.remaps[0].Mapped.String() != "10.71.0.0/16" || p.remaps[1].Real.String() != "192.168.5.0/24" {
			t.Errorf("%s: remaps %+v, want 10.1.0.0/16 as 10.71.0.0/16 and 192.168.5.0/24 as 10.72.5.0/24", c.mode, p.remaps)
		}
	}
	// Without remote networks: only the peer's tunnel address, no routes, no remaps.
	p := planAgent(t, ModeServer).plan(&desired{})
	if len(p.allowed) != 1 || p.allowed[0].String() != "169.254.18.2/32" || len(p.routes) != 0 || len(p.remaps) != 0 {
		t.Errorf("plan of no networks: %+v", p)
	}
}

// TestPeer: the peer gets the desired key and endpoint, the planned allowed IPs and the
// configured keepalive.
func TestPeer(t *testing.T) {
	a := planAgent(t, ModeClient)
	k := newKey(t).PublicKey()
	ep := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51840}
	allowed := []net.IPNet{cidr(t, "169.254.18.1/32")}
	p := a.peer(&desired{peerKey: k, endpoint: ep}, allowed)
	if p.PublicKey != k || p.Endpoint != ep || len(p.AllowedIPs) != 1 || p.AllowedIPs[0].String() != "169.254.18.1/32" || p.Keepalive != 7*time.Second {
		t.Errorf("peer = %+v", p)
	}
}

// TestSameTunnel: a change of keys, port, endpoint or remote networks reconfigures WireGuard;
// the gateway object and the MTU do not.
func TestSameTunnel(t *testing.T) {
	k1, k2, k3 := newKey(t), newKey(t), newKey(t)
	base := func() *desired {
		return &desired{privateKey: k1, peerKey: k2.PublicKey(), listenPort: 51840,
			endpoint: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51840}, mtu: 1400,
			remote: []nat.Remap{{Real: cidr(t, "10.1.0.0/16"), Mapped: cidr(t, "10.1.0.0/16")}}}
	}
	if !sameTunnel(base(), base()) {
		t.Error("two equal states differ")
	}
	same := base()
	same.mtu, same.gateway = 1280, &netv1beta1.GatewayServer{}
	if !sameTunnel(base(), same) {
		t.Error("an MTU change reconfigures WireGuard")
	}
	noEndpoint := func() *desired { d := base(); d.endpoint = nil; return d }
	if !sameTunnel(noEndpoint(), noEndpoint()) {
		t.Error("two states without endpoint differ")
	}
	for name, edit := range map[string]func(*desired){
		"private key": func(d *desired) { d.privateKey = k3 },
		"peer key":    func(d *desired) { d.peerKey = k3.PublicKey() },
		"port":        func(d *desired) { d.listenPort = 51841 },
		"endpoint":    func(d *desired) { d.endpoint = &net.UDPAddr{IP: net.IPv4(192, 0, 2, 2), Port: 51840} },
		"no endpoint": func(d *desired) { d.endpoint = nil },
		"remap":       func(d *desired) { d.remote[0].Mapped = cidr(t, "10.71.0.0/16") },
		"one more":    func(d *desired) { d.remote = append(d.remote, d.remote[0]) },
	} {
		d := base()
		edit(d)
		if sameTunnel(base(), d) || sameTunnel(d, base()) {
			t.Errorf("a change of %s does not reconfigure WireGuard", name)
		}
	}
}
