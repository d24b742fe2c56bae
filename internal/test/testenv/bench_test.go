package testenv_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// BenchmarkStart measures how long one and two clusters take to start, minimal (etcd and
// kube-apiserver with our CRDs) and full (plus scheduler, controller manager and a KWOK node),
// and the resident memory of all their processes right after start.
// Run with: make bench, or go test -run='^$' -bench=Start -benchtime=3x ./internal/test/testenv/
func BenchmarkStart(b *testing.B) {
	for _, n := range []int{1, 2} {
		for _, full := range []bool{false, true} {
			kind := "minimal"
			if full {
				kind = "full"
			}
			b.Run(fmt.Sprintf("clusters=%d/%s", n, kind), func(b *testing.B) {
				var opts []testenv.ClusterOptions
				for i := range n {
					name := fmt.Sprintf("c%d", i)
					if full {
						opts = append(opts, fullCluster(name))
					} else {
						opts = append(opts, testenv.ClusterOptions{Name: name})
					}
				}
				var total time.Duration
				var rssTotal int64
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					env, err := testenv.Start(b.Context(), opts...)
					if err != nil {
						b.Fatal(err)
					}
					total += time.Since(start)
					b.StopTimer()
					for _, pid := range testenv.ProcessesUsing(env.Dir) {
						rssTotal += rssKiB(pid)
					}
					if err := env.Stop(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(total.Seconds()/float64(b.N), "s/start")
				b.ReportMetric(float64(rssTotal)/1024/float64(b.N), "MiB-rss")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// rssKiB returns the resident set size of pid in KiB, or 0 when it cannot be read.
func rssKiB(pid int) int64 {
	st, err := testenv.ReadProcStat(pid)
	if err != nil {
		return 0
	}
	return st.RSSKiB
}
