package agent

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/gateway/tunnel"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// running is an agent's Run in progress.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

// startRun runs a in the network namespace host ("": the test's own, for agents that must not
// get as far as the host) until stop or the end of the test.
func startRun(t *testing.T, a *Agent, host string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() {
		if host == "" {
			r.done <- a.Run(ctx)
			return
		}
		r.done <- netns.Do(netns.Named(host), func() error { return a.Run(ctx) })
	}()
	t.Cleanup(func() {
		if r.done != nil {
			_ = r.stop(t)
		}
	})
	return r
}

// stop ends Run and returns its error; Run must return within 10 s.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done = nil
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context ending")
		return nil
	}
}

// waitStatus waits until the Connection name in ns reads want (with a latency when Connected).
func waitStatus(t *testing.T, c client.Client, ns, name string, want netv1beta1.ConnectionStatusValue, timeout time.Duration) {
	t.Helper()
	testenv.EventuallyOK(t, "Connection "+ns+"/"+name+" "+string(want), timeout, func() error {
		conn, err := getConnection(t.Context(), c, ns, name)
		if err != nil {
			return err
		}
		if conn.Status.Value != want || (want == netv1beta1.Connected && conn.Status.Latency.Value == "") {
			return errors.New("status " + string(conn.Status.Value) + ", latency " + conn.Status.Latency.Value)
		}
		return nil
	})
}

// TestRunWaitsForObjects: Run follows the cache; with no objects it reports Connecting and
// keeps retrying; when its context ends it returns without error.
func TestRunWaitsForObjects(t *testing.T) {
	cl := testCluster(t)
	ns := newTenant(t, cl)
	a, err := New(cl.Config, Options{Mode: ModeClient, Namespace: ns, GatewayName: "client", ProbeInterval: 50 * time.Millisecond}, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	r := startRun(t, a, "")
	waitStatus(t, cl.Client, ns, "client", netv1beta1.Connecting, 10*time.Second)
	// The GatewayClient shows up through the cache, with an endpoint that is not UDP: Error.
	gw := gatewayClient(ns, "client", "keys", "192.0.2.1", 51840, 0)
	tcp := corev1.ProtocolTCP
	gw.Spec.Endpoint.Protocol = &tcp
	create(t, cl.Client, gw)
	waitStatus(t, cl.Client, ns, "client", netv1beta1.ConnectionError, 10*time.Second)
	if err := r.stop(t); err != nil {
		t.Errorf("Run returned %v when its context ended", err)
	}
	if !strings.Contains(a.lastErr, "UDP only") {
		t.Errorf("last error %q, want the endpoint's protocol", a.lastErr)
	}
}

// TestRunNeedsTheCache: Run gives up when its context ends before the cache syncs.
func TestRunNeedsTheCache(t *testing.T) {
	cl := testCluster(t)
	a, err := New(cl.Config, Options{Mode: ModeServer, Namespace: newTenant(t, cl), GatewayName: "server"}, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := a.Run(ctx); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "syncing the cache") {
		t.Errorf("Run with an ended context: %v, want a cache sync error", err)
	}
}

// peeringEnd is one gateway of a peering run end to end.
type peeringEnd struct {
	agent *Agent
	host  string // network namespace
	ns    string // tenant namespace
	name  string // gateway and Connection name

	logger logr.Logger
}

// log gives the end a logger and returns what it writes.
func (e *peeringEnd) log(t *testing.T) *logLines {
	t.Helper()
	l, lines := capturingLogger(t)
	e.logger = l
	return lines
}

// TestRunPeering runs a server and a client gateway, each in a network namespace of its own,
// following their objects through the cache: both Connections read Connected over the tunnel,
// a new remote network is routed live, and stopping the server removes its interface, marks
// its Connection Connecting and makes the client's follow.
func TestRunPeering(t *testing.T) {
	testenv.RequireNetAdmin(t)
	cl := testCluster(t)
	c := cl.Client
	srv := peeringEnd{host: gatewayHost(t), ns: newTenant(t, cl), name: "server"}
	cli := peeringEnd{host: gatewayHost(t), ns: newTenant(t, cl), name: "client"}
	srvKey, cliKey := newKey(t), newKey(t)
	port := freeUDPPort(t)
	// WireGuard's UDP sockets live where the process does (the device's goroutines run on
	// threads outside the namespaces): the client reaches the server on the host's loopback.
	create(t, c, keySecret(srv.ns, "keys", srvKey), publicKey(srv.ns, "client", cliKey.PublicKey()),
		configuration(srv.ns, "client", "10.2.0.0/16"), gatewayServer(srv.ns, srv.name, "keys", int32(port), 1400))
	create(t, c, keySecret(cli.ns, "keys", cliKey), publicKey(cli.ns, "server", srvKey.PublicKey()),
		configuration(cli.ns, "server", "10.1.0.0/16"), gatewayClient(cli.ns, cli.name, "keys", "127.0.0.1", int32(port), 1400))
	srvLog, cliLog := srv.log(t), cli.log(t)
	for _, e := range []*peeringEnd{&srv, &cli} {
		a, err := New(cl.Config, Options{Mode: map[string]Mode{"server": ModeServer, "client": ModeClient}[e.name],
			Namespace: e.ns, GatewayName: e.name, ProbeInterval: 100 * time.Millisecond, Keepalive: time.Second}, e.logger)
		if err != nil {
			t.Fatal(err)
		}
		e.agent = a
		t.Cleanup(func() { _ = os.Remove(tunnel.SocketPath(a.opts.Interface)) })
	}
	srvRun := startRun(t, srv.agent, srv.host)
	cliRun := startRun(t, cli.agent, cli.host)
	waitStatus(t, c, srv.ns, srv.name, netv1beta1.Connected, 30*time.Second)
	waitStatus(t, c, cli.ns, cli.name, netv1beta1.Connected, 30*time.Second)
	// Each end reports the first handshake after it configured its peer (before any change
	// reconfigures it: the session outlives a reconfiguration).
	for _, l := range []*logLines{srvLog, cliLog} {
		testenv.Eventually(t, "a handshake report", 5*time.Second, func(context.Context) bool { return l.has(`"msg"="handshake completed"`) })
	}
	// Both Connections say when the last handshake completed, at the next probe after it (the
	// server sees it complete after its tunnel answered): a moment ago.
	for _, e := range []struct{ ns, name string }{{srv.ns, srv.name}, {cli.ns, cli.name}} {
		conn := &netv1beta1.Connection{}
		testenv.Eventually(t, "the last handshake on Connection "+e.ns+"/"+e.name, 5*time.Second, func(ctx context.Context) bool {
			return c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: e.name}, conn) == nil && conn.Annotations[consts.LastHandshakeAnnotation] != ""
		})
		at, err := time.Parse(time.RFC3339, conn.Annotations[consts.LastHandshakeAnnotation])
		if err != nil || time.Since(at) > time.Minute || time.Since(at) < -time.Second {
			t.Errorf("Connection %s/%s: last handshake %q (%v), want a moment ago", e.ns, e.name, conn.Annotations[consts.LastHandshakeAnnotation], err)
		}
	}

	// A remote network added to the server's Configuration is routed into the tunnel.
	conf := &netv1beta1.Configuration{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: srv.ns, Name: "client"}, conf); err != nil {
		t.Fatal(err)
	}
	conf.Spec.Remote.CIDR.External = []netv1beta1.CIDR{"10.3.0.0/16"}
	if err := c.Update(t.Context(), conf); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "route to 10.3.0.0/16 through the server's tunnel", 10*time.Second, func(context.Context) bool {
		return slices.Contains(readHost(t, srv.host, srv.agent).routes, "10.3.0.0/16")
	})

	if err := srvRun.stop(t); err != nil {
		t.Errorf("server Run returned %v", err)
	}
	if srv.agent.handshakeSeen.IsZero() {
		t.Error("the server reported a handshake it did not record")
	}
	if st := readHost(t, srv.host, srv.agent); st.link || st.rulesErr == nil {
		t.Errorf("after the server stopped: interface exists %t, rules %+v", st.link, st.rules)
	}
	if conn, err := getConnection(t.Context(), c, srv.ns, srv.name); err != nil || conn.Status.Value != netv1beta1.Connecting {
		t.Errorf("server Connection after stop: %v (%v), want Connecting", conn, err)
	}
	waitStatus(t, c, cli.ns, cli.name, netv1beta1.Connecting, 10*time.Second)
	if err := cliRun.stop(t); err != nil {
		t.Errorf("client Run returned %v", err)
	}
}

// TestRunStopsWithItsDevice: when the tunnel interface disappears under it, Run returns an
// error (the pod restarts) after removing what is left.
func TestRunStopsWithItsDevice(t *testing.T) {
	host := gatewayHost(t)
	cl := testCluster(t)
	ns := newTenant(t, cl)
	create(t, cl.Client, keySecret(ns, "keys", newKey(t)), publicKey(ns, "peer", newKey(t).PublicKey()),
		configuration(ns, "peer", "10.2.0.0/16"), gatewayServer(ns, "server", "keys", int32(freeUDPPort(t)), 1400))
	a, err := New(cl.Config, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server"}, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(tunnel.SocketPath(a.opts.Interface)) })
	r := startRun(t, a, host)
	testenv.Eventually(t, "the server's interface", 10*time.Second, func(context.Context) bool {
		return readHost(t, host, a).link
	})
	ip(t, host, "link", "del", a.opts.Interface)
	select {
	case err := <-r.done:
		r.done = nil
		if err == nil || !strings.Contains(err.Error(), "the tunnel device stopped") {
			t.Errorf("Run returned %v, want the device's end", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run went on without its interface")
	}
	if st := readHost(t, host, a); st.rulesErr == nil {
		t.Errorf("rules left after Run returned: %+v", st.rules)
	}
}
