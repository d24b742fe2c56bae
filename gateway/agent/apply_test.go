package agent

import (
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/gateway/nat"
	"github.com/peerkit/terraform-provider-liqo/gateway/probe"
	"github.com/peerkit/terraform-provider-liqo/gateway/tunnel"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// TestApplyServer applies a server's desired states one after the other in a throwaway
// network namespace, and checks the host after each: the interface with its address and an
// MTU from the underlay, WireGuard's configuration, the routes, the NAT rules and the probe
// responder; what a predecessor left is removed; unchanged states reconfigure nothing; shutdown
// removes it all.
func TestApplyServer(t *testing.T) {
	host := gatewayHost(t)
	cl := testCluster(t)
	ctx := t.Context()
	ns := newTenant(t, cl)
	// The underlay: a link with MTU 1400 holding the default route.
	underlay(t, host, 1400)

	a := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server", Keepalive: 3 * time.Second})
	shutdownAtEnd(t, host, a)
	// A predecessor that was killed left its NAT table and the fwmark rule of older gateways.
	inHost(t, host, func() error {
		if err := (nat.Rules{Interface: a.opts.Interface, MTU: 1000}).Sync(); err != nil {
			return err
		}
		return addOldGatewayRule(a.opts.RouteTable)
	})
	if st := readHost(t, host, a); st.rulesErr != nil || !st.fwmarkRule {
		t.Fatalf("leftovers not in place: rules %v, fwmark rule %t", st.rulesErr, st.fwmarkRule)
	}

	gw := gatewayServer(ns, "server", "keys", 51840, 0)
	create(t, cl.Client, gw)
	private, peer := newKey(t), newKey(t).PublicKey()
	d := &desired{gateway: gw, privateKey: private, peerKey: peer, listenPort: freeUDPPort(t), remote: []nat.Remap{
		{Real: cidr(t, "10.1.0.0/16"), Mapped: cidr(t, "10.71.0.0/16")},
		{Real: cidr(t, "10.2.0.0/16"), Mapped: cidr(t, "10.2.0.0/16")},
	}}
	inHost(t, host, func() error { return a.apply(ctx, d) })

	st := readHost(t, host, a)
	if !st.link || !st.up || st.mtu != 1340 || !slices.Equal(st.addrs, []string{"169.254.18.1/30"}) {
		t.Errorf("interface: exists %t, up %t, MTU %d, addresses %v; want up, MTU 1400-60, 169.254.18.1/30", st.link, st.up, st.mtu, st.addrs)
	}
	if !slices.Equal(st.routes, []string{"10.2.0.0/16", "10.71.0.0/16"}) {
		t.Errorf("routes through the tunnel %v, want the remote networks as seen locally: 10.2.0.0/16, 10.71.0.0/16", st.routes)
	}
	if st.rulesErr != nil || st.rules.Netmaps != 2 || st.rules.ClampMSS != 1300 {
		t.Errorf("NAT rules %+v (%v), want one remap both ways and the MSS clamped to 1300", st.rules, st.rulesErr)
	}
	if st.fwmarkRule || st.forwarding != "1" {
		t.Errorf("fwmark rule left %t, forwarding %q: want the rule gone and forwarding on", st.fwmarkRule, st.forwarding)
	}
	dev := wgDevice(t, a.opts.Interface)
	if dev.PrivateKey != private || dev.ListenPort != d.listenPort || len(dev.Peers) != 1 {
		t.Fatalf("WireGuard device: private key ok %t, port %d (want %d), %d peers (want 1)", dev.PrivateKey == private, dev.ListenPort, d.listenPort, len(dev.Peers))
	}
	p := dev.Peers[0]
	if got := ipNets(p.AllowedIPs); p.PublicKey != peer || p.Endpoint != nil || p.PersistentKeepaliveInterval != 3*time.Second ||
		!slices.Equal(got, []string{"169.254.18.2/32", "10.1.0.0/16", "10.2.0.0/16"}) {
		t.Errorf("WireGuard peer: key ok %t, endpoint %v (want none), keepalive %s (want 3s), allowed %v (want the client's address and the networks as the remote uses them)",
			p.PublicKey == peer, p.Endpoint, p.PersistentKeepaliveInterval, got)
	}
	if conn := mustConnection(t, a, "server"); conn.Status.Value != netv1beta1.Connecting {
		t.Errorf("Connection %q after the tunnel was created, want Connecting", conn.Status.Value)
	}
	inHost(t, host, func() error { // the responder answers on the tunnel address
		_, err := probe.Once(ctx, net.IPv4(169, 254, 18, 1), time.Second)
		return err
	})

	// The same state again: nothing is reconfigured.
	configured, rules := a.configuredAt, a.rules
	same := *d
	inHost(t, host, func() error { return a.apply(ctx, &same) })
	if a.configuredAt != configured || a.rules != rules {
		t.Error("applying the same state again reconfigured WireGuard or rewrote the rules")
	}

	// No remap any more, and an MTU from the spec.
	d2 := *d
	d2.mtu, d2.remote = 1280, d.remote[1:]
	inHost(t, host, func() error { return a.apply(ctx, &d2) })
	st = readHost(t, host, a)
	if st.mtu != 1280 || !slices.Equal(st.routes, []string{"10.2.0.0/16"}) || st.rules.Netmaps != 0 || st.rules.ClampMSS != 1240 {
		t.Errorf("after dropping the remap with MTU 1280: MTU %d, routes %v, rules %+v", st.mtu, st.routes, st.rules)
	}
	if got := ipNets(wgDevice(t, a.opts.Interface).Peers[0].AllowedIPs); !slices.Equal(got, []string{"169.254.18.2/32", "10.2.0.0/16"}) {
		t.Errorf("allowed IPs %v after dropping 10.1.0.0/16", got)
	}
	if !a.configuredAt.After(configured) {
		t.Error("a change of the remote networks did not reconfigure WireGuard")
	}

	// The peer's key rotates: the old peer goes.
	d3 := d2
	d3.peerKey = newKey(t).PublicKey()
	inHost(t, host, func() error { return a.apply(ctx, &d3) })
	if peers := wgDevice(t, a.opts.Interface).Peers; len(peers) != 1 || peers[0].PublicKey != d3.peerKey {
		t.Errorf("after the peer's key rotated: %d peers, first is the new key: %t", len(peers), len(peers) > 0 && peers[0].PublicKey == d3.peerKey)
	}

	inHost(t, host, a.shutdown)
	st = readHost(t, host, a)
	if st.link || !errors.Is(st.rulesErr, nat.ErrNoTable) {
		t.Errorf("after shutdown: interface exists %t, rules %+v (%v)", st.link, st.rules, st.rulesErr)
	}
	if _, err := os.Stat(tunnel.SocketPath(a.opts.Interface)); !os.IsNotExist(err) {
		t.Errorf("UAPI socket left after shutdown (%v)", err)
	}
}

// TestApplyClient: a client takes the second tunnel address, configures the server's endpoint
// on its peer, and takes its MTU from the link that reaches the endpoint.
func TestApplyClient(t *testing.T) {
	host := gatewayHost(t)
	cl := testCluster(t)
	ctx := t.Context()
	ns := newTenant(t, cl)
	// A default route through an MTU 1400 link, but the endpoint is reached through lo.
	ip(t, host, "link", "set", "lo", "mtu", "9000")
	underlay(t, host, 1400)

	a := newTestAgent(t, cl, Options{Mode: ModeClient, Namespace: ns, GatewayName: "client"})
	shutdownAtEnd(t, host, a)
	endpoint := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1).To4(), Port: freeUDPPort(t)}
	d := &desired{privateKey: newKey(t), peerKey: newKey(t).PublicKey(), endpoint: endpoint,
		remote: []nat.Remap{{Real: cidr(t, "10.1.0.0/16"), Mapped: cidr(t, "10.1.0.0/16")}}}
	inHost(t, host, func() error { return a.apply(ctx, d) })
	st := readHost(t, host, a)
	if st.mtu != 8940 || !slices.Equal(st.addrs, []string{"169.254.18.2/30"}) || !slices.Equal(st.routes, []string{"10.1.0.0/16"}) {
		t.Errorf("MTU %d (want 9000-60, from lo, the endpoint's link), addresses %v, routes %v", st.mtu, st.addrs, st.routes)
	}
	dev := wgDevice(t, a.opts.Interface)
	if len(dev.Peers) != 1 || dev.Peers[0].Endpoint.String() != endpoint.String() ||
		!slices.Equal(ipNets(dev.Peers[0].AllowedIPs), []string{"169.254.18.1/32", "10.1.0.0/16"}) {
		t.Errorf("WireGuard peers %+v, want one at %s allowing the server's address and 10.1.0.0/16", dev.Peers, endpoint)
	}
	if conn := mustConnection(t, a, "client"); conn.Spec.GatewayRef.Kind != "GatewayClient" || conn.Status.Value != netv1beta1.Connecting {
		t.Errorf("Connection %+v, want a client's, Connecting", conn)
	}
}

// TestApplyResumesAfterFailure: a predecessor's NAT table goes as soon as the tunnel is
// created, even when apply then fails (here: the probe port is taken); the next apply resumes
// from there and completes.
func TestApplyResumesAfterFailure(t *testing.T) {
	host := gatewayHost(t)
	cl := testCluster(t)
	ctx := t.Context()
	ns := newTenant(t, cl)
	a := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server"})
	shutdownAtEnd(t, host, a)
	var taken *net.UDPConn
	inHost(t, host, func() (err error) {
		if err := (nat.Rules{Interface: a.opts.Interface, MTU: 1000}).Sync(); err != nil {
			return err
		}
		taken, err = net.ListenUDP("udp4", &net.UDPAddr{Port: probe.Port})
		return err
	})
	defer func() { _ = taken.Close() }()

	d := &desired{privateKey: newKey(t), peerKey: newKey(t).PublicKey(), listenPort: freeUDPPort(t), mtu: 1400,
		remote: []nat.Remap{{Real: cidr(t, "10.1.0.0/16"), Mapped: cidr(t, "10.71.0.0/16")}}}
	var err error
	inHost(t, host, func() error { err = a.apply(ctx, d); return nil })
	if err == nil || !strings.Contains(err.Error(), "listening for probes") {
		t.Fatalf("apply with the probe port taken: %v, want the responder's failure", err)
	}
	if st := readHost(t, host, a); !st.link || !errors.Is(st.rulesErr, nat.ErrNoTable) || a.applied != nil {
		t.Errorf("after the failure: interface %t (want it), rules %+v (%v) (want the leftovers gone), applied %t (want not)",
			st.link, st.rules, st.rulesErr, a.applied != nil)
	}

	_ = taken.Close()
	inHost(t, host, func() error { return a.apply(ctx, d) })
	if st := readHost(t, host, a); st.rules.Netmaps != 2 || st.rules.ClampMSS != 1360 || !slices.Equal(st.routes, []string{"10.71.0.0/16"}) || a.applied != d {
		t.Errorf("after the retry: rules %+v, routes %v, applied %t", st.rules, st.routes, a.applied == d)
	}
}

// TestApplyFailures: without any underlay to take the MTU from, apply fails before it creates
// anything; an interface name taken by another link makes the tunnel creation fail.
func TestApplyFailures(t *testing.T) {
	host := gatewayHost(t)
	cl := testCluster(t)
	ns := newTenant(t, cl)
	a := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server"})
	shutdownAtEnd(t, host, a)
	d := &desired{privateKey: newKey(t), peerKey: newKey(t).PublicKey(), listenPort: freeUDPPort(t)}
	var err error
	inHost(t, host, func() error { err = a.apply(t.Context(), d); return nil })
	if err == nil || a.dev != nil {
		t.Fatalf("apply with no underlay: error %v, device made %t; want an error and no device", err, a.dev != nil)
	}
	if st := readHost(t, host, a); st.link {
		t.Error("apply with no underlay created the interface")
	}

	ip(t, host, "link", "add", a.opts.Interface, "type", "veth", "peer", "name", "other")
	d.mtu = 1400
	inHost(t, host, func() error { err = a.apply(t.Context(), d); return nil })
	if err == nil || a.dev != nil || a.applied != nil {
		t.Errorf("apply with the interface name taken: error %v; want one, and nothing recorded as applied", err)
	}
}
