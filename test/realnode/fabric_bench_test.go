package realnode

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// BenchmarkFabricAcrossNodes measures the fabric on TestPeeringAcrossNodes's clusters (two real
// nodes each, distinct pod CIDRs): the time from terraform apply to HTTP from every consumer
// node to every offloaded pod; from a client pod on the gateway's node (gw) and from one on the
// other node (node), the HTTP round-trip latency to an offloaded pod (200 requests on one
// kept-alive connection) and the throughput of a 64 MiB answer; the fabric agents' largest RSS.
// It runs only under -bench (-benchtime=1x: the clusters are the cost, not the loop).
func BenchmarkFabricAcrossNodes(b *testing.B) {
	requireFlannelNodes(b)
	tc := fabricCase{name: "bench", consumerPods: "10.232.0.0/16", providerPods: "10.233.0.0/16", virtualKubelet: "inprocess"}
	h, consumer, provider, before := twoNodePair(b, tc)
	for b.Loop() {
		p := peerUpAcrossNodes(b, consumer, provider)
		b.ReportMetric(p.trafficIn.Seconds(), "s-apply-to-traffic")
		target := "http://" + net.JoinHostPort(p.offloaded[0].Status.PodIP, "8080")
		for where, n := range map[string]*testenv.RealNode{"gw": p.consumerGW, "node": otherNode(consumer, p.consumerGW)} {
			from := p.clients[n.Name].Name
			lat := testHTTPFields(b, consumer, p.local, from, "bench", "200", target+"/", "keepalive")
			b.ReportMetric(lat["p50_us"]/1000, "ms-p50-"+where)
			b.ReportMetric(lat["p99_us"]/1000, "ms-p99-"+where)
			rate := testHTTPFields(b, consumer, p.local, from, "rate", target+"/bytes?n="+strconv.Itoa(64<<20))
			b.ReportMetric(rate["bytes_per_s"]/(1<<20), "MiB/s-"+where)
			b.Logf("from %s (%s): latency %v, throughput %v", n.Name, where, lat, rate)
		}
		var agent int64
		for _, rss := range processRSSAll("liqo-fabric") {
			agent = max(agent, rss)
		}
		b.ReportMetric(float64(agent)/(1<<20), "MiB-agent-RSS")
		b.Logf("largest fabric agent RSS: %.1f MiB", float64(agent)/(1<<20))
		peerDownAcrossNodes(b, h, p, before)
	}
}

// testHTTPFields runs the test image's command args in pod of c and returns the key=value
// numbers it prints.
func testHTTPFields(tb testing.TB, c *testenv.Cluster, ns, pod string, args ...string) map[string]float64 {
	tb.Helper()
	out, err := kubectl(c, append([]string{"-n", ns, "exec", pod, "--", "/test-http"}, args...)...)
	if err != nil {
		tb.Fatalf("test-http %v in %s: %v", args, pod, err)
	}
	fields := map[string]float64{}
	for _, f := range strings.Fields(out) {
		if k, v, ok := strings.Cut(f, "="); ok {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				fields[k] = x
			}
		}
	}
	return fields
}
