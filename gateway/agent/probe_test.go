package agent

import (
	"net"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/gateway/nat"
	"github.com/peerkit/terraform-provider-liqo/gateway/probe"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// appliedAgent returns an agent of mode whose tunnel is up in a throwaway network namespace
// (returned too), with a peer that never answers.
func appliedAgent(t *testing.T, mode Mode) (*Agent, string) {
	t.Helper()
	host := gatewayHost(t)
	cl := testCluster(t)
	ns := newTenant(t, cl)
	a := newTestAgent(t, cl, Options{Mode: mode, Namespace: ns, GatewayName: "gw", ProbeInterval: 100 * time.Millisecond})
	shutdownAtEnd(t, host, a)
	d := &desired{privateKey: newKey(t), peerKey: newKey(t).PublicKey(), mtu: 1400,
		remote: []nat.Remap{{Real: cidr(t, "10.1.0.0/16"), Mapped: cidr(t, "10.1.0.0/16")}}}
	if mode == ModeClient {
		d.endpoint = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1).To4(), Port: freeUDPPort(t)} // nobody there
	} else {
		d.listenPort = freeUDPPort(t)
	}
	inHost(t, host, func() error { return a.apply(t.Context(), d) })
	return a, host
}

// probeIn runs one probe of a in host.
func probeIn(t *testing.T, host string, a *Agent) {
	t.Helper()
	inHost(t, host, func() error { a.probe(t.Context()); return nil })
}

// TestProbeClient: a Connected tunnel that stops answering reads Connecting from the third
// failed probe on, not before; a client drops its session from the second failure on (at most
// once a second); an answer makes it Connected again, with the latency, and clears the count.
func TestProbeClient(t *testing.T) {
	a, host := appliedAgent(t, ModeClient)
	ctx := t.Context()
	a.writeStatus(ctx, netv1beta1.Connected, time.Millisecond)

	probeIn(t, host, a)
	if conn := mustConnection(t, a, "gw"); a.failures != 1 || conn.Status.Value != netv1beta1.Connected || !a.lastReset.IsZero() {
		t.Fatalf("after 1 failed probe: %d failures, status %q, reset at %v; want 1, still Connected, no reset", a.failures, conn.Status.Value, a.lastReset)
	}
	probeIn(t, host, a)
	if conn := mustConnection(t, a, "gw"); a.failures != 2 || conn.Status.Value != netv1beta1.Connected {
		t.Fatalf("after 2 failed probes: %d failures, status %q; want 2, still Connected", a.failures, conn.Status.Value)
	}
	reset := a.lastReset
	if reset.IsZero() || !a.configuredAt.Equal(reset) {
		t.Errorf("after 2 failed probes the client did not reset its peer (reset %v, configured %v)", reset, a.configuredAt)
	}
	if peers := wgDevice(t, a.opts.Interface).Peers; len(peers) != 1 || len(peers[0].AllowedIPs) != 2 || peers[0].Endpoint == nil {
		t.Errorf("after the reset the peer is %+v, want it back with its endpoint and allowed IPs", peers)
	}
	probeIn(t, host, a)
	if conn := mustConnection(t, a, "gw"); a.failures != 3 || conn.Status.Value != netv1beta1.Connecting {
		t.Errorf("after 3 failed probes: %d failures, status %q; want 3, Connecting", a.failures, conn.Status.Value)
	}
	if !a.lastReset.Equal(reset) {
		t.Error("the peer was reset twice within a second")
	}

	// Something answers at the server's tunnel address: the tunnel is up again.
	ip(t, host, "addr", "add", "169.254.18.1/32", "dev", "lo")
	var r *probe.Responder
	inHost(t, host, func() (err error) { r, err = probe.Listen(net.IPv4(169, 254, 18, 1)); return err })
	defer func() { _ = r.Close() }()
	probeIn(t, host, a)
	conn := mustConnection(t, a, "gw")
	if a.failures != 0 || conn.Status.Value != netv1beta1.Connected || conn.Status.Latency.Value == "" {
		t.Errorf("after an answer: %d failures, status %+v; want 0, Connected with a latency", a.failures, conn.Status)
	}
	if lat, err := time.ParseDuration(conn.Status.Latency.Value); err != nil || lat <= 0 || lat > time.Second {
		t.Errorf("latency %q is not a plausible round trip", conn.Status.Latency.Value)
	}
}

// TestProbeServer: a server whose tunnel does not answer never resets its peer (it has no
// endpoint to start a handshake with); it reads Connecting once the tunnel counts as down.
func TestProbeServer(t *testing.T) {
	a, host := appliedAgent(t, ModeServer)
	a.writeStatus(t.Context(), netv1beta1.Connected, time.Millisecond)
	for range failuresBeforeDown {
		probeIn(t, host, a)
	}
	if !a.lastReset.IsZero() {
		t.Error("a server reset its peer")
	}
	if conn := mustConnection(t, a, "gw"); conn.Status.Value != netv1beta1.Connecting {
		t.Errorf("after %d failed probes: status %q, want Connecting", failuresBeforeDown, conn.Status.Value)
	}
}
