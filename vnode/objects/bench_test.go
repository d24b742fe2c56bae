package objects_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
	"github.com/peerkit/terraform-provider-liqo/vnode/objects"
	"github.com/peerkit/terraform-provider-liqo/vnode/reflection"
	rt "github.com/peerkit/terraform-provider-liqo/vnode/reflection/reflectiontest"
)

// BenchmarkReflectConfigMaps: 200 ConfigMaps created at once (8 clients in parallel) in an
// offloaded namespace; the time until every copy exists on the provider, and each copy's
// latency from the moment its local create call returned to the moment the provider's watch
// shows the copy (p50, p99).
func BenchmarkReflectConfigMaps(b *testing.B) {
	benchmarkReflect(b, func(bed *rt.Bed) watcher { return bed.Admin.CoreV1().ConfigMaps(remoteNS) },
		func(bed *rt.Bed, name string) error {
			_, err := bed.Local.CoreV1().ConfigMaps(localNS).Create(b.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
				Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			return err
		})
}

// BenchmarkReflectSecrets is BenchmarkReflectConfigMaps with Secrets, which are reflected
// write-only (with a ledger of their names on the provider).
func BenchmarkReflectSecrets(b *testing.B) {
	benchmarkReflect(b, func(bed *rt.Bed) watcher { return bed.Admin.CoreV1().Secrets(remoteNS) },
		func(bed *rt.Bed, name string) error {
			_, err := bed.Local.CoreV1().Secrets(localNS).Create(b.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
				Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{})
			return err
		})
}

// watcher watches the provider's copies of a kind.
type watcher interface {
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

func benchmarkReflect(b *testing.B, remote func(*rt.Bed) watcher, create func(bed *rt.Bed, name string) error) {
	const n, parallel = 200, 8
	bed := rt.New(b, testenv.ClusterOptions{}, testenv.ClusterOptions{})
	bed.Namespaces(b, localNS, remoteNS)
	rt.Start(b, objects.New(), bed.Env(b, namespaces.Static(map[string]string{localNS: remoteNS})))
	ctx := b.Context()
	var lat []time.Duration
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		w, err := remote(bed).Watch(ctx, metav1.ListOptions{LabelSelector: consts.ReflectedLabel + "=true"})
		if err != nil {
			b.Fatal(err)
		}
		var created sync.Map // name -> time the create returned
		prefix := fmt.Sprintf("bench-%d-", i)
		start := time.Now()
		var creators sync.WaitGroup
		for p := range parallel {
			creators.Add(1)
			go func() {
				defer creators.Done()
				for j := p; j < n; j += parallel {
					name := fmt.Sprintf("%s%d", prefix, j)
					if err := create(bed, name); err != nil {
						b.Error(err)
					}
					created.Store(name, time.Now())
				}
			}()
		}
		seen := map[string]time.Time{}
		deadline := time.After(2 * time.Minute)
		for len(seen) < n {
			select {
			case ev := <-w.ResultChan():
				// The watch starts with the copies of earlier rounds: count this round's only.
				if m := reflection.Meta(ev.Object); m != nil && ev.Type == watch.Added && strings.HasPrefix(m.GetName(), prefix) {
					seen[m.GetName()] = time.Now()
				}
			case <-deadline:
				b.Fatalf("only %d of %d objects reflected after 2 minutes", len(seen), n)
			}
		}
		total += time.Since(start)
		w.Stop()
		creators.Wait()
		for name, at := range seen {
			if c, ok := created.Load(name); ok {
				// A copy may show up before its create call has returned to the client.
				lat = append(lat, max(0, at.Sub(c.(time.Time))))
			}
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/200-objects")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}
