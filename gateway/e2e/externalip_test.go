package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestExternalIP: cluster b exposes a local address (spec.ip, a TCP listener in its gateway's
// host) under an address of its external CIDR (status.ip), through an ipam.liqo.io IP in its
// Liqo namespace (a non-default one, given to the gateways with --liqo-namespace). A pod of
// cluster a reaches the listener through the tunnel by dialling status.ip: the listener sees
// the pod's own address dialling spec.ip, the pod a reply from status.ip (TCP would not
// connect otherwise). An IP without status.ip, or in another namespace, is not translated; when
// a remaps b's external CIDR, the pod dials the remapped address; once the IP is deleted, the
// dial fails.
func TestExternalIP(t *testing.T) {
	requireNetAdmin(t)
	ctx := t.Context()
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"}, testenv.ClusterOptions{Name: "b"})
	sfx := suffix(t)
	topo := newTopology(t, sfx, topoOptions{})
	p := newPeering(ctx, t, env, topo, sfx)
	const (
		liqoNS   = "liqo-system"
		external = "10.80.0.0/16" // b's external CIDR, as b uses it
		remapped = "10.81.0.0/16" // how a sees it once remapped
		localIP  = "10.96.0.10"   // spec.ip: the listener's address in b's gateway host
		statusIP = "10.80.0.5"    // status.ip
	)
	p.gatewayArgs = []string{"--liqo-namespace=" + liqoNS}
	// a routes b's external CIDR into the tunnel, as the Configuration says.
	conf := &netv1beta1.Configuration{}
	if err := p.server.Client.Get(ctx, client.ObjectKey{Namespace: p.serverNS, Name: "b"}, conf); err != nil {
		t.Fatal(err)
	}
	conf.Spec.Remote.CIDR.External = []netv1beta1.CIDR{external}
	if err := p.server.Client.Update(ctx, conf); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{liqoNS, "liqo"} {
		if err := p.client.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// The listener: bound at spec.ip in b's gateway host, it echoes a line with the addresses
	// it saw.
	sh(t, "ip", "-n", topo.b.host, "addr", "add", localIP+"/32", "dev", "lo")
	ln, err := netns.Listen(netns.Named(topo.b.host), "tcp", net.JoinHostPort(localIP, "8118"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go serveAddrs(ln)

	p.startServer(t)
	p.startClient(t)
	waitConnection(ctx, t, p.server, p.serverNS, serverName, netv1beta1.Connected, 30*time.Second)
	waitConnection(ctx, t, p.client, p.clientNS, clientName, netv1beta1.Connected, 30*time.Second)

	// IPs without status.ip, and with one but in another namespace: nothing is translated.
	ip := &ipamv1alpha1.IP{ObjectMeta: metav1.ObjectMeta{Namespace: liqoNS, Name: "api-server-proxy"}, Spec: ipamv1alpha1.IPSpec{IP: localIP}}
	elsewhere := &ipamv1alpha1.IP{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo", Name: "api-server-proxy"}, Spec: ipamv1alpha1.IPSpec{IP: localIP}}
	for _, o := range []*ipamv1alpha1.IP{ip, elsewhere} {
		if err := p.client.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	elsewhere.Status.IP = statusIP
	if err := p.client.Client.Status().Update(ctx, elsewhere); err != nil {
		t.Fatal(err)
	}
	to := net.JoinHostPort(statusIP, "8118")
	// Nothing changes on b's gateway to wait for: give it the time it takes to follow objects.
	time.Sleep(2 * time.Second)
	mustNotDial(t, topo.a.pod, to, "with no IP of b's Liqo namespace holding status.ip")
	if st, err := gatewayRules(topo.b.host, p.clientIf); err != nil || st.ExternalIPs != 0 {
		t.Errorf("b's gateway rules %+v (%v): want no external IP rewrites", st, err)
	}

	// status.ip is allocated: the pod reaches the listener at it.
	ip.Status = ipamv1alpha1.IPStatus{IP: statusIP, CIDR: external}
	if err := p.client.Client.Status().Update(ctx, ip); err != nil {
		t.Fatal(err)
	}
	got := mustDial(t, topo.a.pod, to)
	if want := fmt.Sprintf("local %s:8118 remote %s", localIP, topo.a.podIP); !strings.HasPrefix(got, want) {
		t.Errorf("the listener saw %q, want %q (the pod's address dialling spec.ip)", got, want)
	}
	if st, err := gatewayRules(topo.b.host, p.clientIf); err != nil || st.ExternalIPs != 2 {
		t.Errorf("b's gateway rules %+v (%v): want 2 external IP rewrites (one each way)", st, err)
	}

	// a remaps b's external CIDR: the pod reaches the listener at the remapped address.
	conf.Status.Remote = &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{External: []netv1beta1.CIDR{remapped}}}
	if err := p.server.Client.Status().Update(ctx, conf); err != nil {
		t.Fatal(err)
	}
	toRemapped := net.JoinHostPort("10.81.0.5", "8118")
	got = mustDial(t, topo.a.pod, toRemapped)
	if want := fmt.Sprintf("local %s:8118 remote %s", localIP, topo.a.podIP); !strings.HasPrefix(got, want) {
		t.Errorf("through the remap, the listener saw %q, want %q", got, want)
	}

	// The IP goes: so does the translation.
	if err := p.client.Client.Delete(ctx, ip); err != nil {
		t.Fatal(err)
	}
	mustNotDial(t, topo.a.pod, toRemapped, "after the IP was deleted")
	if st, err := gatewayRules(topo.b.host, p.clientIf); err != nil || st.ExternalIPs != 0 {
		t.Errorf("b's gateway rules after the IP was deleted %+v (%v): want no external IP rewrites", st, err)
	}
}

// serveAddrs answers each connection of ln with a line "local <addr> remote <ip>", the
// addresses the connection has on the listener's side.
func serveAddrs(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		remote, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		_, _ = fmt.Fprintf(c, "local %s remote %s\n", c.LocalAddr(), remote)
		_ = c.Close()
	}
}

// dial connects from netns ns to addr, checks that the connection's peer is addr (the replies
// came from it) and returns the line the listener wrote.
func dial(ns, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := netns.DialContext(ctx, netns.Named(ns), "tcp", addr)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	if c.RemoteAddr().String() != addr {
		return "", fmt.Errorf("connected to %s, want %s", c.RemoteAddr(), addr)
	}
	_ = c.SetDeadline(time.Now().Add(time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		return "", fmt.Errorf("reading from %s: %w", addr, err)
	}
	return string(b), nil
}

// mustDial dials addr from ns until it answers (the gateways follow the objects within
// seconds) and returns the listener's line.
func mustDial(tb testing.TB, ns, addr string) string {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := dial(ns, addr)
		if err == nil {
			return got
		}
		if time.Now().After(deadline) {
			tb.Fatalf("dialling %s from %s: %v", addr, ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// mustNotDial fails the test unless dialling addr from ns fails within a few seconds (the
// gateways follow the objects within seconds), twice in a row.
func mustNotDial(tb testing.TB, ns, addr, when string) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for failed := 0; failed < 2; {
		got, err := dial(ns, addr)
		if err != nil {
			failed++
			continue
		}
		failed = 0
		if time.Now().After(deadline) {
			tb.Fatalf("%s: dialling %s from %s reached %q, want no answer", when, addr, ns, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
