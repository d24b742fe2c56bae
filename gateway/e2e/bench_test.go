package e2e

import (
	"regexp"
	"testing"
	"time"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
)

// BenchmarkTunnel measures, in one run: iperf3 TCP pod to pod through the tunnel and over the
// raw underlay veth (and their ratio), the handshake time after both sides are configured (the
// server first, then the client), and the ping latency both ways. Both gateways and the load
// share the machine's cores.
func BenchmarkTunnel(b *testing.B) {
	requireNetAdmin(b)
	ctx := b.Context()
	env := testenv.New(b, testenv.ClusterOptions{Name: "a"}, testenv.ClusterOptions{Name: "b"})
	sfx := suffix(b)
	topo := newTopology(b, sfx, topoOptions{})
	p := newPeering(ctx, b, env, topo, sfx)
	srv := p.startServer(b)
	for deadline := time.Now().Add(20 * time.Second); srv.logEntry("NAT rules written") == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("server gateway never configured")
		}
	}
	cli := p.startClient(b)
	waitConnection(ctx, b, p.client, p.clientNS, clientName, netv1beta1.Connected, 30*time.Second)
	waitConnection(ctx, b, p.server, p.serverNS, serverName, netv1beta1.Connected, 30*time.Second)
	hs := cli.logEntry("handshake completed")
	if hs == nil {
		b.Fatal("client logged no handshake")
	}
	handshake := hs["afterConfiguredMicroseconds"].(float64) / 1000

	b.ResetTimer()
	var raw, tun, pingAB, pingBA float64
	for range b.N {
		raw += iperf(b, topo.b.host, topo.a.host, topo.b.underlay, 5).bitsPerSecond
		tun += iperf(b, topo.b.pod, topo.a.pod, topo.b.podIP, 5).bitsPerSecond
		pingAB += avgPing(b, topo.a.pod, topo.b.podIP)
		pingBA += avgPing(b, topo.b.pod, topo.a.podIP)
	}
	n := float64(b.N)
	b.ReportMetric(raw/n/1e9, "raw-Gbit/s")
	b.ReportMetric(tun/n/1e9, "tunnel-Gbit/s")
	b.ReportMetric(tun/raw, "tunnel/raw")
	b.ReportMetric(handshake, "handshake-ms")
	b.ReportMetric(pingAB/n, "ping-a-to-b-ms")
	b.ReportMetric(pingBA/n, "ping-b-to-a-ms")
	b.ReportMetric(0, "ns/op")
}

var pingTime = regexp.MustCompile(`time=(\S+)`)

// avgPing pings dst 10 times from ns and returns the average round trip in milliseconds.
func avgPing(tb testing.TB, ns, dst string) float64 {
	tb.Helper()
	out, ok := ping(ns, dst, 10)
	if !ok {
		tb.Fatalf("ping %s from %s:\n%s", dst, ns, out)
	}
	var sum time.Duration
	m := pingTime.FindAllStringSubmatch(out, -1)
	for _, s := range m {
		d, err := time.ParseDuration(s[1])
		if err != nil {
			tb.Fatalf("ping output %q: %v", s[1], err)
		}
		sum += d
	}
	if len(m) == 0 {
		tb.Fatalf("no ping times in:\n%s", out)
	}
	return float64(sum) / float64(len(m)) / 1e6
}
