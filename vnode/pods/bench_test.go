package pods_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// BenchmarkOffload offloads a Deployment scaled at once from 0 to n replicas, for each n of
// $LIQO_BENCH_OFFLOAD_PODS (comma-separated, default 100,1000; make bench adds 10000), and
// reports: all-running-s, the time from the scale-up until every local pod is Running (status
// reflected from the provider); p50-ms and p99-ms, per pod, from the pod's creation (its ADDED
// event on the consumer) to its Running status (the event that shows it); and, for this
// process (the consumer side: the virtual node's runner and pod reflector; the provider's
// ShadowPod controller runs in a child process, the clusters in their own processes): rss-MB
// once every pod is Running, rss-delta-MB from before the scale-up, live-heap-MB (the Go heap
// after a collection then) and cpu-s (user + system) spent from the scale-up until every pod
// is Running. This process is the virtual kubelet plus the benchmark's own watches (local
// pods, remote pods, ShadowPods, the floor's pods), which keep no objects, only maps of names
// and times, but whose decoding leaves garbage that rss-MB counts until the next collection:
// live-heap-MB is the virtual kubelet's caches and queues (and the process's baseline, about
// rss-MB before the first scale-up less the Go runtime's). Each iteration scales up,
// waits, scales back to 0 and waits for every pod to be gone; the waits log every minute how
// many pods are Running. With $LIQO_BENCH_PROFILE_DIR, a heap profile of this process is
// written there once every offloaded pod is Running (writeHeapProfile).
//
// The floor, measured first in each iteration: the same pods created directly on the provider
// by a Deployment of the same template without the virtual node's placement (the API servers',
// scheduler's and KWOK's own cost on this machine): floor-all-running-s and floor-p99-ms, and
// the ratios all-running-x (offloaded all-running-s over the floor's) and p99-x. bed-cpu-s and
// floor-bed-cpu-s are the CPU time of the clusters' processes and of the ShadowPod controller's
// process while the offloaded pods and the floor's came up (this process's is cpu-s): on a
// machine whose cores they fill, all-running-x cannot be much below their ratio.
func BenchmarkOffload(b *testing.B) {
	for _, n := range offloadSizes(b) {
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchmarkOffload(b, n) })
	}
}

// offloadPodsEnv lists the pod counts BenchmarkOffload runs, comma-separated (default 100,1000).
const offloadPodsEnv = "LIQO_BENCH_OFFLOAD_PODS"

// offloadSizes reads $LIQO_BENCH_OFFLOAD_PODS.
func offloadSizes(b *testing.B) []int {
	v := os.Getenv(offloadPodsEnv)
	if v == "" {
		return []int{100, 1000}
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("$%s=%q: want pod counts of 1 or more, comma-separated", offloadPodsEnv, v)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// waitFor is how long the benchmark waits for n pods to be Running or gone: 5 minutes, and
// 200 ms a pod beyond 1000 (35 minutes at 10,000: this shared 2-core machine ran 10,000 at
// about 10 pods a second); at most $LIQO_BENCH_OFFLOAD_WAIT (a duration) when set, for a run
// that must end in time (it then fails with the count Running).
func waitFor(n int) time.Duration {
	d := 5*time.Minute + time.Duration(max(n-1000, 0))*200*time.Millisecond
	if limit, err := time.ParseDuration(os.Getenv(offloadWaitEnv)); err == nil && limit < d {
		return limit
	}
	return d
}

// offloadWaitEnv caps waitFor.
const offloadWaitEnv = "LIQO_BENCH_OFFLOAD_WAIT"

// memLimitEnv, a quantity (270Mi), is the soft memory limit of the benchmark's process (the
// virtual kubelet's), as internal/memlimit sets from a container's limit; GOMEMLIMIT would
// reach the test bed's API servers too.
const memLimitEnv = "LIQO_BENCH_MEMLIMIT"

func benchmarkOffload(b *testing.B, n int) {
	if v := os.Getenv(memLimitEnv); v != "" {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			b.Fatalf("$%s: %v", memLimitEnv, err)
		}
		before := debug.SetMemoryLimit(q.Value())
		b.Cleanup(func() { debug.SetMemoryLimit(before) })
		b.Logf("the virtual kubelet's process runs with a soft memory limit of %s", q.String())
	}
	qps := []string{"--kube-api-qps=1000", "--kube-api-burst=2000"}
	// The virtual node probes the provider as it does by default (every 5 s, 5 s to answer): the
	// tests' 1 s was too short for a provider answering 10,000 pods, whose virtual node then
	// turned NotReady again and again, holding back the pods' statuses.
	var notReady atomic.Int64
	bd := newBed(b, bedOptions{nodePods: strconv.Itoa(n + 100), componentArgs: qps, shadowPodsInChild: true,
		probeInterval: 5 * time.Second, log: countNotReady(&notReady)})
	ctx := b.Context()
	dep := deployment("bench", 0)
	create(b, bd.cons.Client, dep)
	bd.createDirect(b)

	var allRunning, p50, p99, rss, rssDelta, heap, cpu, bedCPU, floorAll, floorP99, floorCPU float64
	for i := 0; i < b.N; i++ {
		fa, fp99, fcpu := bd.directOnce(ctx, b, n)
		floorAll, floorP99, floorCPU = floorAll+fa.Seconds(), floorP99+float64(fp99.Milliseconds()), floorCPU+fcpu.Seconds()
		notReadyBefore := notReady.Load()
		r := bd.offloadOnce(ctx, b, n)
		b.Logf("the virtual node turned NotReady %d times while the pods came up", notReady.Load()-notReadyBefore)
		allRunning += r.allRunning.Seconds()
		p50 += float64(r.p50.Milliseconds())
		p99 += float64(r.p99.Milliseconds())
		rss, rssDelta, heap, cpu = rss+r.rssMB, rssDelta+r.rssDeltaMB, heap+r.heapMB, cpu+r.cpu.Seconds()
		bedCPU += r.bedCPU.Seconds()
	}
	N := float64(b.N)
	b.ReportMetric(floorAll/N, "floor-all-running-s")
	b.ReportMetric(floorP99/N, "floor-p99-ms")
	b.ReportMetric(floorCPU/N, "floor-bed-cpu-s")
	b.ReportMetric(bedCPU/N, "bed-cpu-s")
	b.ReportMetric(allRunning/floorAll, "all-running-x")
	b.ReportMetric(p99/max(floorP99, 1), "p99-x")
	b.ReportMetric(allRunning/N, "all-running-s")
	b.ReportMetric(p50/N, "p50-ms")
	b.ReportMetric(p99/N, "p99-ms")
	b.ReportMetric(rss/N, "rss-MB")
	b.ReportMetric(rssDelta/N, "rss-delta-MB")
	b.ReportMetric(heap/N, "live-heap-MB")
	b.ReportMetric(cpu/N, "cpu-s")
	b.ReportMetric(0, "ns/op")
}

type offloadResult struct {
	allRunning, p50, p99 time.Duration
	rssMB, rssDeltaMB    float64
	heapMB               float64
	cpu                  time.Duration
	// bedCPU is what the clusters' processes and the ShadowPod controller's used meanwhile.
	bedCPU time.Duration
}

// countNotReady is a logger that only counts the virtual node's turns to NotReady (the runner
// logs "virtual node readiness changed" with ready=false).
func countNotReady(n *atomic.Int64) logr.Logger {
	return funcr.New(func(_, args string) {
		if strings.Contains(args, "virtual node readiness changed") && strings.Contains(args, `"ready"=false`) {
			n.Add(1)
		}
	}, funcr.Options{})
}

// offloadOnce scales the bench Deployment from 0 to n, measures, and scales it back to 0.
func (bd *bed) offloadOnce(ctx context.Context, b *testing.B, n int) offloadResult {
	b.Helper()
	pods := bd.consKube.CoreV1().Pods(localNs)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=bench"})
	if err != nil || len(list.Items) != 0 {
		b.Fatalf("bench pods before the scale-up: %d, %v", len(list.Items), err)
	}
	w, err := retryWatch(ctx, list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = "app=bench"
		return pods.Watch(ctx, o)
	})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()

	// The provider's side of each pod, for a breakdown of the latency.
	rlist, err := bd.provKube.CoreV1().Pods(remoteNs).List(ctx, metav1.ListOptions{LabelSelector: "app=bench"})
	if err != nil {
		b.Fatal(err)
	}
	rw, err := retryWatch(ctx, rlist.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = "app=bench"
		return bd.provKube.CoreV1().Pods(remoteNs).Watch(ctx, o)
	})
	if err != nil {
		b.Fatal(err)
	}
	defer rw.Stop()
	gvr := offv1beta1.GroupVersion.WithResource("shadowpods")
	dyn := dynamic.NewForConfigOrDie(bd.prov.Config).Resource(gvr).Namespace(remoteNs)
	slist, err := dyn.List(ctx, metav1.ListOptions{LabelSelector: "app=bench"})
	if err != nil {
		b.Fatal(err)
	}
	sw, err := retryWatch(ctx, slist.GetResourceVersion(), func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = "app=bench"
		return dyn.Watch(ctx, o)
	})
	if err != nil {
		b.Fatal(err)
	}
	defer sw.Stop()
	var mu sync.Mutex
	shadowAdded, remoteAdded, remoteRunning := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	// Writes seen per object until every pod is Running: what each pod costs the API servers.
	var shadowWrites, remoteWrites, localWrites int
	go func() {
		for ev := range sw.ResultChan() {
			if m, err := meta.Accessor(ev.Object); err == nil {
				mu.Lock()
				shadowWrites++
				if _, seen := shadowAdded[m.GetName()]; !seen {
					shadowAdded[m.GetName()] = time.Now()
				}
				mu.Unlock()
			}
		}
	}()
	go func() {
		for ev := range rw.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				now := time.Now()
				mu.Lock()
				remoteWrites++
				if _, seen := remoteAdded[p.Name]; !seen {
					remoteAdded[p.Name] = now
				}
				if _, seen := remoteRunning[p.Name]; !seen && p.Status.Phase == corev1.PodRunning {
					remoteRunning[p.Name] = now
				}
				mu.Unlock()
			}
		}
	}()

	rssBefore := rssMB()
	cpuBefore := cpuTime()
	bedBefore := bd.bedCPU()
	consReqBefore, provReqBefore := apiRequests(ctx, bd.consKube), apiRequests(ctx, bd.provKube)
	start := time.Now()
	scale(b, bd.cons.Client, n)
	bound := make(map[string]time.Time, n)
	added, running := waitRunning(b, w, n, func(p *corev1.Pod, now time.Time) {
		localWrites++
		if _, seen := bound[p.Name]; !seen && p.Spec.NodeName != "" {
			bound[p.Name] = now
		}
	})
	res := offloadResult{allRunning: time.Since(start), cpu: cpuTime() - cpuBefore}
	bedUsed := bd.bedCPU().Since(bedBefore)
	res.bedCPU = bedUsed.Total()
	b.Logf("CPU of the test bed's processes until every pod was Running: %s", bedUsed)
	b.Logf("requests per pod until every pod was Running: consumer %s; provider %s",
		apiRequests(ctx, bd.consKube).Since(consReqBefore).Per(n), apiRequests(ctx, bd.provKube).Since(provReqBefore).Per(n))
	res.rssMB = rssMB()
	res.rssDeltaMB = res.rssMB - rssBefore
	res.heapMB = liveHeapMB()
	writeHeapProfile(b, n)
	res.p50, res.p99 = quantiles(running)
	b.Logf("%d pods: all Running after %v; creation to Running p50 %v p99 %v; RSS %.0f MB (+%.0f), live heap %.0f MB; CPU %v",
		n, res.allRunning.Round(time.Millisecond), res.p50, res.p99, res.rssMB, res.rssDeltaMB, res.heapMB, res.cpu.Round(time.Millisecond))

	rw.Stop()
	sw.Stop()
	mu.Lock()
	defer mu.Unlock()
	b.Logf("writes per pod until all were Running: local pod %.1f, ShadowPod %.1f, remote pod %.1f",
		float64(localWrites)/float64(n), float64(shadowWrites)/float64(n), float64(remoteWrites)/float64(n))
	var toBound, toShadow, toRemote, remoteRun, back []time.Duration
	for name, a := range added {
		ra, rr := remoteAdded[name], remoteRunning[name]
		if ra.IsZero() || rr.IsZero() {
			continue
		}
		toBound = append(toBound, bound[name].Sub(a))
		toShadow = append(toShadow, shadowAdded[name].Sub(bound[name]))
		toRemote, remoteRun, back = append(toRemote, ra.Sub(shadowAdded[name])), append(remoteRun, rr.Sub(ra)), append(back, a.Add(running[name]).Sub(rr))
	}
	for _, l := range [][]time.Duration{toBound, toShadow, toRemote, remoteRun, back} {
		slices.Sort(l)
	}
	if len(toRemote) > 0 {
		for _, q := range []struct {
			name string
			i    int
		}{{"p50", len(toRemote) / 2}, {"p99", (len(toRemote)*99+99)/100 - 1}} {
			b.Logf("%s per stage: local pod added -> bound to the virtual node %v; -> ShadowPod added %v; -> remote pod added %v; -> remote Running %v; -> local Running %v",
				q.name, toBound[q.i], toShadow[q.i], toRemote[q.i], remoteRun[q.i], back[q.i])
		}
	}
	b.StopTimer()
	scale(b, bd.cons.Client, 0)
	testenv.Eventually(b, "every bench pod gone on both sides", waitFor(n), func(ctx context.Context) bool {
		l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=bench"})
		r, rerr := bd.provKube.CoreV1().Pods(remoteNs).List(ctx, metav1.ListOptions{LabelSelector: "app=bench"})
		return err == nil && rerr == nil && len(l.Items) == 0 && len(r.Items) == 0
	})
	b.StartTimer()
	return res
}

// waitRunning reads pod events from w until n pods were seen Running, calling onEvent (when
// not nil) for every pod event but deletions; it returns when each pod was first seen and how
// long from then it took to be Running. It fails b after waitFor(n).
func waitRunning(b *testing.B, w watch.Interface, n int, onEvent func(*corev1.Pod, time.Time)) (map[string]time.Time, map[string]time.Duration) {
	b.Helper()
	added := make(map[string]time.Time, n)
	running := make(map[string]time.Duration, n)
	timeout := time.After(waitFor(n))
	start := time.Now()
	progress := time.NewTicker(time.Minute)
	defer progress.Stop()
	for len(running) < n {
		select {
		case <-progress.C:
			b.Logf("after %v: %d pods seen, %d Running", time.Since(start).Round(time.Second), len(added), len(running))
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("watch of the bench pods ended with %d of %d Running", len(running), n)
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted {
				continue
			}
			now := time.Now()
			if onEvent != nil {
				onEvent(p, now)
			}
			if _, seen := added[p.Name]; !seen {
				added[p.Name] = now
			}
			if _, done := running[p.Name]; !done && p.Status.Phase == corev1.PodRunning {
				running[p.Name] = now.Sub(added[p.Name])
			}
		case <-timeout:
			b.Fatalf("%d of %d pods Running after %v", len(running), n, waitFor(n))
		}
	}
	return added, running
}

// quantiles are the p50 and p99 of the durations.
func quantiles(running map[string]time.Duration) (p50, p99 time.Duration) {
	lat := slices.Sorted(maps.Values(running))
	return lat[len(lat)/2], lat[(len(lat)*99+99)/100-1]
}

// directNs is the provider's namespace of the floor's pods, created directly there.
const directNs = "bench-direct"

// createDirect creates the floor's Deployment "direct" on the provider, at 0 replicas: the
// bench Deployment's template without the virtual node's placement, in directNs with its
// ServiceAccount and ConfigMap.
func (bd *bed) createDirect(b *testing.B) {
	b.Helper()
	dep := deployment("direct", 0)
	dep.Namespace = directNs
	spec := &dep.Spec.Template.Spec
	spec.NodeSelector, spec.Affinity, spec.Tolerations = nil, nil, nil
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: directNs}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: directNs, Name: spec.ServiceAccountName}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: directNs, Name: "settings"}},
		dep,
	} {
		create(b, bd.prov.Client, o)
	}
}

// directOnce scales the floor's Deployment from 0 to n on the provider, measures as
// offloadOnce does (every pod Running, p99 from creation to Running), and scales it back to 0.
func (bd *bed) directOnce(ctx context.Context, b *testing.B, n int) (allRunning, p99, bedCPU time.Duration) {
	b.Helper()
	pods := bd.provKube.CoreV1().Pods(directNs)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=direct"})
	if err != nil || len(list.Items) != 0 {
		b.Fatalf("floor pods before the scale-up: %d, %v", len(list.Items), err)
	}
	w, err := retryWatch(ctx, list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = "app=direct"
		return pods.Watch(ctx, o)
	})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	bedBefore := bd.bedCPU()
	start := time.Now()
	scaleIn(b, bd.prov.Client, directNs, "direct", n)
	_, running := waitRunning(b, w, n, nil)
	allRunning = time.Since(start)
	bedUsed := bd.bedCPU().Since(bedBefore)
	p50, p99 := quantiles(running)
	b.Logf("floor, %d pods created directly on the provider: all Running after %v; creation to Running p50 %v p99 %v; CPU of the test bed's processes: %s",
		n, allRunning.Round(time.Millisecond), p50, p99, bedUsed)
	b.StopTimer()
	scaleIn(b, bd.prov.Client, directNs, "direct", 0)
	testenv.Eventually(b, "every floor pod gone", waitFor(n), func(ctx context.Context) bool {
		l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=direct"})
		return err == nil && len(l.Items) == 0
	})
	b.StartTimer()
	return allRunning, p99, bedUsed.Total()
}

// retryWatch watches from rv on, watching again from the last event seen when the API server
// ends a watch.
func retryWatch(ctx context.Context, rv string, w cache.WatchFuncWithContext) (watch.Interface, error) {
	return watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: w})
}

func scale(b *testing.B, c client.Client, n int) {
	b.Helper()
	scaleIn(b, c, localNs, "bench", n)
}

// scaleIn sets the replicas of Deployment ns/name to n.
func scaleIn(b *testing.B, c client.Client, ns, name string, n int) {
	b.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
	if err := c.Patch(b.Context(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		client.RawPatch(types.MergePatchType, patch)); err != nil {
		b.Fatal(err)
	}
}

// rssMB is this process's resident set size, in MB.
func rssMB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// profileDirEnv names a folder: when set, BenchmarkOffload writes there a heap profile of this
// process once every offloaded pod is Running, offload-<n>-heap.pprof.
const profileDirEnv = "LIQO_BENCH_PROFILE_DIR"

// writeHeapProfile writes the heap profile of n pods, when $LIQO_BENCH_PROFILE_DIR is set.
func writeHeapProfile(b *testing.B, n int) {
	b.Helper()
	dir := os.Getenv(profileDirEnv)
	if dir == "" {
		return
	}
	path := filepath.Join(dir, fmt.Sprintf("offload-%d-heap.pprof", n))
	f, err := os.Create(path)
	if err != nil {
		b.Fatalf("heap profile: %v", err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatalf("heap profile %s: %v", path, err)
	}
}

// liveHeapMB is what this process's Go heap holds after a collection, in MB: its live objects,
// without the garbage of the watches' decoding that the RSS also counts.
func liveHeapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bedCPU reads the CPU time of every process of the two clusters and of the ShadowPod
// controller's child process, by cluster and command.
func (bd *bed) bedCPU() testenv.ProcessCPU {
	out := testenv.ProcessCPU{}
	// The child process running the provider's ShadowPod controller is found by its -test.run.
	for cluster, dir := range map[string]string{"consumer": bd.cons.Dir, "provider": bd.prov.Dir, "provider-shadowpods": "TestShadowPodManagerProcess"} {
		out.Add(cluster+"/", testenv.ProcessesUsing(dir))
	}
	return out
}

// apiRequests reads an API server's request counters; empty when its metrics cannot be read.
func apiRequests(ctx context.Context, kube kubernetes.Interface) testenv.RequestCounts {
	c, _ := testenv.APIRequests(ctx, kube)
	return c
}
