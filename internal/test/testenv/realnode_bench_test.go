package testenv_test

import (
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// BenchmarkRealNodeStart measures a cluster with a real node: from Start to the node Ready
// (control plane included; the first iteration also builds the local images), from containerd's
// start to the node Ready, from a Deployment's creation to its pod Running and Ready, and the
// resident memory of kubelet, containerd and kube-proxy then. Each iteration's numbers are
// logged; the metrics are their means.
func BenchmarkRealNodeStart(b *testing.B) {
	needRealNode(b)
	var up, ready, running time.Duration
	var rss = map[string]int64{}
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		env, err := testenv.Start(b.Context(), testenv.ClusterOptions{Name: "bench", RealNode: &testenv.RealNodeOptions{}})
		if err != nil {
			b.Fatal(err)
		}
		c := env.Cluster("bench")
		upIn := time.Since(t0)
		t1 := time.Now()
		dep := testHTTPDeployment("web", c.RealNode.Name, 1)
		if err := c.Client.Create(b.Context(), dep); err != nil {
			b.Fatal(err)
		}
		waitRunning(b, c, dep)
		runningIn := time.Since(t1)
		m, err := c.RealNode.RSS()
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("iteration %d: up %s, node Ready %s after containerd's start, pod Running %s after creation; RSS kubelet %d MiB, containerd %d MiB, kube-proxy %d MiB",
			i, upIn.Round(time.Millisecond), c.RealNode.ReadyIn.Round(time.Millisecond), runningIn.Round(time.Millisecond), m["kubelet"]>>20, m["containerd"]>>20, m["kube-proxy"]>>20)
		up, ready, running = up+upIn, ready+c.RealNode.ReadyIn, running+runningIn
		for k, v := range m {
			rss[k] += v
		}
		if err := env.Stop(); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(up.Seconds()/n, "up-s")
	b.ReportMetric(ready.Seconds()/n, "node-ready-s")
	b.ReportMetric(running.Seconds()/n, "pod-running-s")
	b.ReportMetric(float64(rss["kubelet"])/n/(1<<20), "kubelet-MiB")
	b.ReportMetric(float64(rss["containerd"])/n/(1<<20), "containerd-MiB")
	b.ReportMetric(float64(rss["kube-proxy"])/n/(1<<20), "kube-proxy-MiB")
	b.ReportMetric(0, "ns/op")
}
