package e2e

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// BenchmarkTunnel measures, in one run: iperf3 TCP pod to pod through the tunnel and over the
// raw underlay veth (the same iperf3 test, and their ratio), the gateways' CPU time per GB
// carried, the handshake time after both sides are configured (the server first, then the
// client), and the ping latency both ways. Both gateways and the load share the machine's cores;
// the 1-minute load average before the run is reported with the numbers.
func BenchmarkTunnel(b *testing.B) {
	requireNetAdmin(b)
	ctx := b.Context()
	env := testenv.New(b, testenv.ClusterOptions{Name: "a"}, testenv.ClusterOptions{Name: "b"})
	sfx := suffix(b)
	topo := newTopology(b, sfx, topoOptions{})
	p := newPeering(ctx, b, env, topo, sfx)
	// Each gateway runs Go code on one thread at a time (GOMAXPROCS=1), as in a gateway pod with
	// a 1-CPU limit (Go sizes GOMAXPROCS from the cgroup limit): here both gateways and the load
	// share 2 cores, and more threads per gateway only add cross-CPU wake-ups (measured: about
	// 20% more CPU per GB carried, and less throughput). LIQO_BENCH_GATEWAY_GOMAXPROCS overrides
	// it; empty or "default": Go's default (the machine's CPU count).
	procs := "1"
	if v, ok := os.LookupEnv("LIQO_BENCH_GATEWAY_GOMAXPROCS"); ok {
		procs = v
	}
	if procs != "" && procs != "default" {
		p.gatewayEnv = []string{"GOMAXPROCS=" + procs}
	}
	// LIQO_BENCH_GATEWAY_GOGC sets the gateways' GOGC (measured here: off makes no difference).
	if v, ok := os.LookupEnv("LIQO_BENCH_GATEWAY_GOGC"); ok {
		p.gatewayEnv = append(p.gatewayEnv, "GOGC="+v)
	}
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

	load := loadAvg(b)
	b.ResetTimer()
	var raw, tun, pingAB, pingBA, tunBytes, gwCPU float64
	for range b.N {
		raw += iperf(b, topo.b.host, topo.a.host, topo.b.underlay, 5).bitsPerSecond
		before := srv.cpuSeconds(b) + cli.cpuSeconds(b)
		r := iperf(b, topo.b.pod, topo.a.pod, topo.b.podIP, 5)
		gwCPU += srv.cpuSeconds(b) + cli.cpuSeconds(b) - before
		tun += r.bitsPerSecond
		tunBytes += float64(r.bytes)
		pingAB += avgPing(b, topo.a.pod, topo.b.podIP)
		pingBA += avgPing(b, topo.b.pod, topo.a.podIP)
	}
	n := float64(b.N)
	b.ReportMetric(raw/n/1e9, "raw-Gbit/s")
	b.ReportMetric(tun/n/1e9, "tunnel-Gbit/s")
	b.ReportMetric(tun/raw, "tunnel/raw")
	// CPU time of both gateways per GB carried: what the tunnel costs, less sensitive than the
	// throughput to what else runs on the machine.
	b.ReportMetric(gwCPU/(tunBytes/1e9), "gateway-CPU-s/GB")
	b.ReportMetric(handshake, "handshake-ms")
	b.ReportMetric(pingAB/n, "ping-a-to-b-ms")
	b.ReportMetric(pingBA/n, "ping-b-to-a-ms")
	// The 1-minute load average before the run: the numbers only compare at a similar load.
	b.ReportMetric(load, "load1")
	b.ReportMetric(0, "ns/op")
}

// loadAvg returns the 1-minute load average.
func loadAvg(tb testing.TB) float64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		tb.Fatal(err)
	}
	v, err := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	if err != nil {
		tb.Fatalf("/proc/loadavg %q: %v", data, err)
	}
	return v
}

// cpuSeconds returns the CPU time (user and system) the gateway process used so far.
func (g *gatewayProc) cpuSeconds(tb testing.TB) float64 {
	tb.Helper()
	st, err := testenv.ReadProcStat(g.cmd.Process.Pid)
	if err != nil {
		tb.Fatalf("gateway CPU time: %v", err)
	}
	return st.CPU.Seconds()
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
