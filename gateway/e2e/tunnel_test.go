package e2e

import (
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/configuration"
	"github.com/peerkit/terraform-provider-liqo/gateway/nat"
	"github.com/peerkit/terraform-provider-liqo/gateway/tunnel"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestPodToPod peers two clusters with distinct pod CIDRs through gateway processes: pods ping
// each other both ways, both Connections read Connected with a latency, the tunnel MTU defaults
// to the underlay's minus 60, and a clean shutdown leaves nothing behind.
func TestPodToPod(t *testing.T) {
	requireNetAdmin(t)
	ctx := t.Context()
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"}, testenv.ClusterOptions{Name: "b"})
	sfx := suffix(t)
	topo := newTopology(t, sfx, topoOptions{})
	p := newPeering(ctx, t, env, topo, sfx)
	srv := p.startServer(t)
	p.startClient(t)

	for _, c := range []struct {
		cluster *testenv.Cluster
		ns      string
		name    string
	}{{p.server, p.serverNS, serverName}, {p.client, p.clientNS, clientName}} {
		conn := waitConnection(ctx, t, c.cluster, c.ns, c.name, netv1beta1.Connected, 30*time.Second)
		lat, err := time.ParseDuration(conn.Status.Latency.Value)
		if err != nil || lat <= 0 || lat > time.Second {
			t.Errorf("cluster %s: latency %q is not a plausible duration", c.cluster.Name, conn.Status.Latency.Value)
		}
		if conn.Status.Latency.Timestamp.IsZero() {
			t.Errorf("cluster %s: latency has no timestamp", c.cluster.Name)
		}
	}
	t.Log(mustPing(t, topo.a.pod, topo.b.podIP))
	t.Log(mustPing(t, topo.b.pod, topo.a.podIP))

	// MTU: 1500 underlay - 60.
	for _, c := range []struct{ ns, ifc string }{{topo.a.host, p.serverIf}, {topo.b.host, p.clientIf}} {
		out := sh(t, "ip", "-n", c.ns, "link", "show", c.ifc)
		if !strings.Contains(out, "mtu 1440 ") {
			t.Errorf("tunnel interface %s: want mtu 1440:\n%s", c.ifc, out)
		}
	}
	// The MSS clamp is in place.
	if st, err := gatewayRules(topo.a.host, p.serverIf); err != nil || st.ClampMSS != 1400 {
		t.Errorf("server gateway's rules %+v (%v): want an MSS clamp to 1400", st, err)
	}

	// Clean shutdown: interface, rules and UAPI socket go away.
	srv.stop()
	if srv.err != nil {
		t.Errorf("server gateway exited with %v", srv.err)
	}
	if linkExists(topo.a.host, p.serverIf) {
		t.Errorf("interface %s still exists after shutdown", p.serverIf)
	}
	if st, err := gatewayRules(topo.a.host, p.serverIf); !errors.Is(err, nat.ErrNoTable) {
		t.Errorf("rules left after shutdown: %+v (%v)", st, err)
	}
	if _, err := os.Stat(tunnel.SocketPath(p.serverIf)); !os.IsNotExist(err) {
		t.Errorf("UAPI socket %s left after shutdown (%v)", tunnel.SocketPath(p.serverIf), err)
	}
	// The client sees the tunnel go.
	waitConnection(ctx, t, p.client, p.clientNS, clientName, netv1beta1.Connecting, 10*time.Second)
}

// TestRemapSamePodCIDR peers two clusters that use the same pod CIDR: the Configuration
// controller allocates a remapped CIDR on each side, and pods reach each other through the
// remapped addresses, both ways.
func TestRemapSamePodCIDR(t *testing.T) {
	requireNetAdmin(t)
	ctx := t.Context()
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"}, testenv.ClusterOptions{Name: "b"})
	sfx := suffix(t)
	topo := newTopology(t, sfx, topoOptions{samePodCIDR: true})
	p := newPeering(ctx, t, env, topo, sfx)
	for _, c := range []*testenv.Cluster{p.server, p.client} {
		startManager(t, c, (&configuration.Reconciler{Client: c.Client}).SetupWithManager)
	}
	// How a sees b's pods, and how b sees a's.
	bSeenFromA := waitRemap(ctx, t, p.server, p.serverNS, "b")
	aSeenFromB := waitRemap(ctx, t, p.client, p.clientNS, "a")
	real := netip.MustParsePrefix(topo.a.podCIDR)
	if bSeenFromA.Overlaps(real) || aSeenFromB.Overlaps(real) {
		t.Fatalf("remapped CIDRs %s, %s overlap the pod CIDR %s", bSeenFromA, aSeenFromB, real)
	}
	p.startServer(t)
	p.startClient(t)
	waitConnection(ctx, t, p.server, p.serverNS, serverName, netv1beta1.Connected, 30*time.Second)
	waitConnection(ctx, t, p.client, p.clientNS, clientName, netv1beta1.Connected, 30*time.Second)

	toB := mapIP(topo.b.podIP, real, bSeenFromA)
	toA := mapIP(topo.a.podIP, real, aSeenFromB)
	t.Logf("a's pod %s reaches b's pod %s at %s; b's pod reaches a's at %s", topo.a.podIP, topo.b.podIP, toB, toA)
	// The helper accepts only answers from the address it pinged: the remapped one.
	t.Log(mustPing(t, topo.a.pod, toB))
	t.Log(mustPing(t, topo.b.pod, toA))
	// Without the remap the address is the pod's own network: it must not cross the tunnel.
	if out, ok := ping(topo.a.pod, topo.b.podIP, 1); ok {
		t.Errorf("b's real pod address answered from a's pod, through the overlap:\n%s", out)
	}
	if st, err := gatewayRules(topo.a.host, p.serverIf); err != nil || st.Netmaps != 2 {
		t.Errorf("a's gateway rules %+v (%v): want 2 address rewrites (one remap, both ways)", st, err)
	}
}

// TestUnderlayMTU1400 runs a TCP transfer pod to pod over an underlay with MTU 1400: the tunnel
// MTU defaults to 1340 and the transfer completes (it stalls with the default 1420).
func TestUnderlayMTU1400(t *testing.T) {
	requireNetAdmin(t)
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("needs iperf3 on PATH")
	}
	ctx := t.Context()
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"}, testenv.ClusterOptions{Name: "b"})
	sfx := suffix(t)
	topo := newTopology(t, sfx, topoOptions{underlayMTU: 1400})
	p := newPeering(ctx, t, env, topo, sfx)
	p.startServer(t)
	p.startClient(t)
	waitConnection(ctx, t, p.server, p.serverNS, serverName, netv1beta1.Connected, 30*time.Second)
	waitConnection(ctx, t, p.client, p.clientNS, clientName, netv1beta1.Connected, 30*time.Second)
	for _, c := range []struct{ ns, ifc string }{{topo.a.host, p.serverIf}, {topo.b.host, p.clientIf}} {
		if out := sh(t, "ip", "-n", c.ns, "link", "show", c.ifc); !strings.Contains(out, "mtu 1340 ") {
			t.Errorf("tunnel interface %s: want mtu 1340:\n%s", c.ifc, out)
		}
	}
	res := iperf(t, topo.b.pod, topo.a.pod, topo.b.podIP, 2)
	if res.bytes < 10<<20 {
		t.Errorf("TCP transfer over MTU 1400 moved only %d bytes", res.bytes)
	}
	t.Logf("TCP through the tunnel over an MTU 1400 underlay: %.2f Gbit/s", res.bitsPerSecond/1e9)
}

// TestRestartAndKeyRotation kills the server gateway (the client's Connection leaves
// Connected), restarts it (both read Connected again within 5 s), then rotates both key pairs
// live (traffic resumes without restarting a gateway).
func TestRestartAndKeyRotation(t *testing.T) {
	requireNetAdmin(t)
	ctx := t.Context()
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"}, testenv.ClusterOptions{Name: "b"})
	sfx := suffix(t)
	topo := newTopology(t, sfx, topoOptions{})
	p := newPeering(ctx, t, env, topo, sfx)
	srv := p.startServer(t)
	cli := p.startClient(t)
	waitConnection(ctx, t, p.server, p.serverNS, serverName, netv1beta1.Connected, 30*time.Second)
	waitConnection(ctx, t, p.client, p.clientNS, clientName, netv1beta1.Connected, 30*time.Second)
	mustPing(t, topo.a.pod, topo.b.podIP)

	srv.kill()
	waitConnection(ctx, t, p.client, p.clientNS, clientName, netv1beta1.Connecting, 10*time.Second)
	if _, ok := ping(topo.a.pod, topo.b.podIP, 1); ok {
		t.Error("ping crossed the tunnel while the server gateway was down")
	}

	restart := time.Now()
	srv = p.startServer(t)
	waitConnection(ctx, t, p.client, p.clientNS, clientName, netv1beta1.Connected, 5*time.Second)
	for srv.logEntry("tunnel connected") == nil {
		if time.Since(restart) > 5*time.Second {
			t.Fatal("the restarted server did not see the tunnel connected within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(restart)
	waitConnection(ctx, t, p.server, p.serverNS, serverName, netv1beta1.Connected, time.Second)
	t.Logf("restart to Connected on both sides: %s", took)
	mustPing(t, topo.a.pod, topo.b.podIP)

	// Rotate the server's keys: its Secret in a, its PublicKey in b.
	rotate := func(keyOwner, pubOwner *testenv.Cluster, keyNS, pubNS, pubName string) {
		k := newKeyPair(t)
		s := &corev1.Secret{}
		if err := keyOwner.Client.Get(ctx, client.ObjectKey{Namespace: keyNS, Name: keysName}, s); err != nil {
			t.Fatal(err)
		}
		s.Data = map[string][]byte{"privateKey": k.private[:], "publicKey": k.public[:]}
		if err := keyOwner.Client.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		pk := &netv1beta1.PublicKey{}
		if err := pubOwner.Client.Get(ctx, client.ObjectKey{Namespace: pubNS, Name: pubName}, pk); err != nil {
			t.Fatal(err)
		}
		pk.Spec.PublicKey = k.public[:]
		if err := pubOwner.Client.Update(ctx, pk); err != nil {
			t.Fatal(err)
		}
	}
	rotate(p.server, p.client, p.serverNS, p.clientNS, "gateway-a")
	rotated := time.Now()
	mustPing(t, topo.a.pod, topo.b.podIP)
	mustPing(t, topo.b.pod, topo.a.podIP)
	t.Logf("traffic resumed %s after the server's keys rotated", time.Since(rotated))
	rotate(p.client, p.server, p.clientNS, p.serverNS, "gateway-b")
	rotated = time.Now()
	mustPing(t, topo.b.pod, topo.a.podIP)
	t.Logf("traffic resumed %s after the client's keys rotated", time.Since(rotated))
	waitConnection(ctx, t, p.client, p.clientNS, clientName, netv1beta1.Connected, 5*time.Second)
	for _, g := range []*gatewayProc{srv, cli} {
		if g.logEntry("starting") == nil || len(g.log()) == 0 {
			t.Errorf("gateway %s has no log", g.ifc)
		}
		if e := g.logEntry("tunnel configured"); e == nil {
			t.Errorf("gateway %s never configured its tunnel", g.ifc)
		}
	}
	// Neither gateway restarted for the rotation.
	for _, g := range []*gatewayProc{srv, cli} {
		select {
		case <-g.done:
			t.Errorf("gateway %s exited: %v", g.ifc, g.err)
		default:
		}
	}
}
