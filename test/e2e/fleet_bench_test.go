package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// fleetSizesEnv lists the fleet sizes BenchmarkFleet runs, comma-separated (default 2,4,8,16).
const fleetSizesEnv = "LIQO_BENCH_FLEET_SIZES"

// fleetProfileEnv names a folder: when set, BenchmarkFleet writes CPU profiles of every
// controller manager and API server during each full-mesh apply there (fleetProfileSeconds long
// from the apply's start), as <clusters>-<cluster>-<manager|apiserver>.pprof.
const fleetProfileEnv = "LIQO_BENCH_PROFILE_DIR"

// fleetProfileSeconds is how long each profile runs.
const fleetProfileSeconds = 20

// fleetRow is one round of BenchmarkFleet: a topology of n clusters applied, planned, changed
// and destroyed, with the floor of its size (one peering applied in the same sandbox).
type fleetRow struct {
	clusters            int
	topology            string
	networking          bool
	peerings            int
	floor, apply        time.Duration
	plan, change        time.Duration
	destroy             time.Duration
	pluginRSS, floorRSS float64 // MiB, the plugin's peak during apply
	pluginCPU           time.Duration
	requests            float64       // per peering, the busiest API server's (per peering it takes part in)
	requestsAll         float64       // per peering, every API server's together
	clusterMiB          float64       // memory of one cluster's processes, on average, before the round
	bedCPU              time.Duration // the CPU time the clusters' processes used during the apply
}

// bedCPU reads the CPU time of every process of the sandbox's clusters (their API servers,
// etcd, controller managers, scheduler, KWOK and Liqo's controller manager, gateways), by command.
func (f *fleetBed) bedCPU() testenv.ProcessCPU {
	out := testenv.ProcessCPU{}
	out.Add("", append(testenv.ProcessesUsing(f.envDir+"/"), testenv.ProcessesUsing(f.r.state+"/")...))
	return out
}

// BenchmarkFleet applies examples/modules/fleet over sandboxes of 2, 4, 8 and 16 clusters (or
// $LIQO_BENCH_FLEET_SIZES), in full mesh and hub-and-spoke, without networking (and with it at 4
// clusters, where the sandbox has gateways): for each, apply, a no-change plan, a change of one
// peering and destroy, the provider plugin's peak RSS and CPU, and the API requests per peering.
// The floor of each size is one peering's apply in the same sandbox (with networking for the
// rounds with networking). It prints the table the
// README holds. Run with: make bench, or
// go test -run='^$' -bench=Fleet -benchtime=1x -timeout=3h ./test/e2e/
func BenchmarkFleet(b *testing.B) {
	var rows []fleetRow
	for _, n := range fleetSizes(b) {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) { rows = append(rows, benchmarkFleetSize(b, n)...) })
	}
	printFleetTable(rows)
}

// fleetSizes reads $LIQO_BENCH_FLEET_SIZES.
func fleetSizes(b *testing.B) []int {
	v := os.Getenv(fleetSizesEnv)
	if v == "" {
		return []int{2, 4, 8, sandbox.MaxClusters}
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 || n > sandbox.MaxClusters {
			b.Fatalf("$%s=%q: want sizes from 2 to %d, comma-separated", fleetSizesEnv, v, sandbox.MaxClusters)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// fleetBed is a sandbox of n clusters with a root module calling the fleet module.
type fleetBed struct {
	r       *sandboxRun
	dir     string
	members []string
	kube    map[string]kubernetes.Interface
	envDir  string
}

// benchmarkFleetSize runs every round of one size in one sandbox.
func benchmarkFleetSize(b *testing.B, n int) []fleetRow {
	f := newFleetBed(b, n)
	clusterMiB := f.clusterMiB()
	b.Logf("%d clusters up: %.0f MiB of processes per cluster", n, clusterMiB)
	// The floor: one peering, applied twice (the first apply also warms the clusters' caches
	// and the plugin's build in the page cache), the faster kept.
	floor := f.round(b, fleetRound{name: "floor", members: f.members[:2], topology: "hub-and-spoke"})
	if again := f.round(b, fleetRound{name: "floor", members: f.members[:2], topology: "hub-and-spoke"}); again.apply < floor.apply {
		floor = again
	}
	withNetworking := n == 4 && f.r.networking
	floors := map[bool]fleetRow{false: floor}
	if withNetworking {
		floors[true] = f.round(b, fleetRound{name: "floor-networking", members: f.members[:2], topology: "hub-and-spoke", networking: true})
	}
	var rows []fleetRow
	for _, topology := range []string{"full-mesh", "hub-and-spoke"} {
		for _, networking := range []bool{false, true} {
			if networking && !withNetworking {
				continue
			}
			name := topology
			if networking {
				name += "/networking"
			}
			b.Run(name, func(b *testing.B) {
				row := f.round(b, fleetRound{name: strings.ReplaceAll(name, "/", "-"), members: f.members, topology: topology, networking: networking})
				row.floor, row.floorRSS, row.clusterMiB = floors[networking].apply, floors[networking].pluginRSS, clusterMiB
				row.report(b)
				rows = append(rows, row)
			})
		}
	}
	return rows
}

// newFleetBed starts the sandbox and writes the root module.
func newFleetBed(b *testing.B, n int) *fleetBed {
	r := startSandbox(b, n)
	envDir, err := os.ReadFile(filepath.Join(r.state, "env-dir"))
	if err != nil {
		b.Fatal(err)
	}
	f := &fleetBed{r: r, dir: b.TempDir(), members: sandbox.ClusterNames[:n], kube: map[string]kubernetes.Interface{},
		envDir: strings.TrimSpace(string(envDir))}
	kubeconfigs := map[string]string{}
	for _, name := range f.members {
		kubeconfigs[name] = filepath.Join(r.state, name+".kubeconfig")
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigs[name])
		if err != nil {
			b.Fatal(err)
		}
		cfg.QPS, cfg.Burst = -1, -1
		if f.kube[name], err = kubernetes.NewForConfig(cfg); err != nil {
			b.Fatal(err)
		}
	}
	module, err := filepath.Rel(f.dir, filepath.Join(r.root, "examples", "modules", "fleet"))
	if err != nil {
		b.Fatal(err)
	}
	vars, err := json.Marshal(map[string]any{"kubeconfigs": kubeconfigs})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "main.tf"), []byte(fmt.Sprintf(fleetRootModule, module)), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "terraform.tfvars.json"), vars, 0o600); err != nil {
		b.Fatal(err)
	}
	if out, _, code := terraformIn(b, f.dir, r.tfEnv, "get", "-no-color"); code != 0 {
		b.Fatalf("terraform get: exit %d\n%s", code, out)
	}
	return f
}

// fleetRootModule calls the fleet module (its relative path is the verb) with small grants, so
// that a provider of a 16-cluster full mesh holds its 15 consumers.
const fleetRootModule = `
terraform {
  required_providers {
    liqo = { source = "peerkit/liqo" }
  }
}
variable "kubeconfigs" { type = map(string) }
variable "members" { type = list(string) }
variable "topology" { type = string }
variable "networking" { type = bool }
variable "resources_by_peering" {
  type    = map(object({ cpu = string, memory = string, pods = string }))
  default = {}
}
provider "liqo" {
  clusters = { for name in var.members : name => { config_path = var.kubeconfigs[name] } }
}
module "fleet" {
  source               = %q
  members              = var.members
  topology             = var.topology
  hub                  = var.members[0]
  networking           = var.networking
  resources            = { cpu = "100m", memory = "128Mi", pods = "3" }
  resources_by_peering = var.resources_by_peering
  timeout              = "20m"
}
`

// fleetRound is one topology over some members.
type fleetRound struct {
	name       string
	members    []string
	topology   string
	networking bool
}

// peerings lists the round's peerings as "<consumer>/<provider>", as the module keys them.
func (rd fleetRound) peerings() []string {
	var out []string
	for _, c := range rd.members {
		for _, p := range rd.members {
			if c != p && (rd.topology == "full-mesh" || c == rd.members[0]) {
				out = append(out, c+"/"+p)
			}
		}
	}
	return out
}

// round applies the round, plans, changes one peering's grant and destroys, measuring each.
func (f *fleetBed) round(b *testing.B, rd fleetRound) fleetRow {
	peerings := rd.peerings()
	members, err := json.Marshal(rd.members)
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"-input=false", "-no-color", "-state=" + filepath.Join(f.dir, rd.name+".tfstate"),
		"-var", "members=" + string(members), "-var", "topology=" + rd.topology, "-var", fmt.Sprintf("networking=%t", rd.networking)}
	row := fleetRow{clusters: len(f.members), topology: rd.topology, networking: rd.networking, peerings: len(peerings)}
	before, idleRate := f.requestBaseline(b)
	cpuBefore := f.bedCPU()
	profiled := f.profile(b, rd)
	apply := f.tfWatched(b, append([]string{"apply", "-auto-approve"}, args...)...)
	profiled()
	bedCPU := f.bedCPU().Since(cpuBefore)
	row.bedCPU = bedCPU.Total()
	b.Logf("CPU of the clusters' processes during the apply, %.1f s per peering: %s", row.bedCPU.Seconds()/float64(len(peerings)), bedCPU)
	row.apply, row.pluginRSS, row.pluginCPU = apply.took, apply.peakRSSMiB, apply.cpu
	row.requests, row.requestsAll = f.requestsPerPeering(b, rd, before, idleRate, apply.took)
	plan := f.tfWatched(b, append([]string{"plan", "-detailed-exitcode"}, args...)...)
	row.plan = plan.took
	change := fmt.Sprintf(`resources_by_peering={%q={cpu="200m",memory="256Mi",pods="4"}}`, peerings[0])
	row.change = f.tfWatched(b, append([]string{"apply", "-auto-approve", "-var", change}, args...)...).took
	row.destroy = f.tfWatched(b, append([]string{"destroy", "-auto-approve"}, args...)...).took
	f.r.expectNothingLeft(b)
	b.Logf("%s over %d clusters (%d peerings, networking %t): apply %s, plan %s, one change %s, destroy %s; plugin peak RSS %.0f MiB, CPU %s",
		rd.name, len(f.members), len(peerings), rd.networking, row.apply.Round(time.Millisecond), row.plan.Round(time.Millisecond),
		row.change.Round(time.Millisecond), row.destroy.Round(time.Millisecond), row.pluginRSS, row.pluginCPU.Round(time.Millisecond))
	return row
}

// watchedRun is what a terraform command took and what its provider plugins used.
type watchedRun struct {
	took       time.Duration
	peakRSSMiB float64
	cpu        time.Duration
}

// tfWatched runs terraform in the bed's folder, sampling its provider plugin processes every
// 50 ms; it fails on a non-zero exit (plan -detailed-exitcode: on changes too).
func (f *fleetBed) tfWatched(b *testing.B, args ...string) watchedRun {
	b.Helper()
	plugin := filepath.Join(f.r.bins, "terraform-provider-liqo")
	var mu sync.Mutex
	peak, cpu := map[int]int64{}, map[int]time.Duration{}
	done := make(chan struct{})
	go func() {
		for tick := time.NewTicker(50 * time.Millisecond); ; {
			for _, pid := range testenv.ProcessesUsing(plugin) {
				if st, err := testenv.ReadProcStat(pid); err == nil {
					mu.Lock()
					peak[pid], cpu[pid] = max(peak[pid], st.RSSKiB), st.CPU
					mu.Unlock()
				}
			}
			select {
			case <-done:
				tick.Stop()
				return
			case <-tick.C:
			}
		}
	}()
	out, took, code := terraformIn(b, f.dir, f.r.tfEnv, args...)
	close(done)
	if code != 0 {
		b.Fatalf("terraform %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	mu.Lock()
	defer mu.Unlock()
	run := watchedRun{took: took}
	for pid, kib := range peak {
		run.peakRSSMiB = max(run.peakRSSMiB, float64(kib)/1024)
		run.cpu += cpu[pid]
	}
	return run
}

// requestBaseline reads every API server's request counters, and their rate while nothing
// happens (5 s), per server: what the components' own loops ask, subtracted from a round's.
func (f *fleetBed) requestBaseline(b *testing.B) (map[string]testenv.RequestCounts, map[string]float64) {
	first := f.requestCounts(b)
	start := time.Now()
	time.Sleep(5 * time.Second)
	now := f.requestCounts(b)
	rate := map[string]float64{}
	for name := range now {
		rate[name] = now[name].Since(first[name]).Without("leases").Total() / time.Since(start).Seconds()
	}
	return now, rate
}

// requestCounts reads every API server's request counters.
func (f *fleetBed) requestCounts(b *testing.B) map[string]testenv.RequestCounts {
	out := map[string]testenv.RequestCounts{}
	for name, kube := range f.kube {
		c, err := testenv.APIRequests(b.Context(), kube)
		if err != nil {
			b.Fatalf("cluster %s: %v", name, err)
		}
		out[name] = c
	}
	return out
}

// requestsPerPeering is what the apply asked each API server (leases and the idle rate left
// out), per peering the server takes part in: the busiest server's, and all servers' together
// per peering.
func (f *fleetBed) requestsPerPeering(b *testing.B, rd fleetRound, before map[string]testenv.RequestCounts, idleRate map[string]float64, took time.Duration) (busiest, all float64) {
	after := f.requestCounts(b)
	peerings := rd.peerings()
	total := 0.0
	for _, name := range rd.members {
		part := 0
		for _, p := range peerings {
			if c, pr, _ := strings.Cut(p, "/"); c == name || pr == name {
				part++
			}
		}
		since := after[name].Since(before[name]).Without("leases")
		n := max(since.Total()-idleRate[name]*took.Seconds(), 0)
		total += n
		if part > 0 {
			busiest = max(busiest, n/float64(part))
			b.Logf("API server of %s: %s per peering (%d peerings)", name, since.Per(part), part)
		}
	}
	return busiest, total / float64(len(peerings))
}

// clusterMiB is the resident memory of one cluster's processes (API server, etcd, controller
// managers, scheduler, KWOK, Liqo's controller manager), on average.
func (f *fleetBed) clusterMiB() float64 {
	var total int64
	for _, name := range f.members {
		total += testenv.ProcessesRSSKiB(testenv.ProcessesUsing(filepath.Join(f.envDir, name) + "/"))
	}
	return float64(total) / 1024 / float64(len(f.members))
}

// report records the row as the sub-benchmark's metrics.
func (row fleetRow) report(b *testing.B) {
	b.ReportMetric(float64(row.peerings), "peerings")
	b.ReportMetric(row.floor.Seconds(), "floor-apply-s")
	b.ReportMetric(row.apply.Seconds(), "apply-s")
	b.ReportMetric(row.apply.Seconds()/row.floor.Seconds(), "apply-x")
	b.ReportMetric(row.plan.Seconds(), "plan-s")
	b.ReportMetric(row.change.Seconds(), "change-s")
	b.ReportMetric(row.destroy.Seconds(), "destroy-s")
	b.ReportMetric(row.pluginRSS, "plugin-MiB")
	b.ReportMetric(row.rssPerPeering(), "plugin-MiB/peering")
	b.ReportMetric(row.pluginCPU.Seconds(), "plugin-cpu-s")
	b.ReportMetric(row.requests, "req/peering")
	b.ReportMetric(row.requestsAll, "req-all/peering")
	b.ReportMetric(row.clusterMiB, "MiB/cluster")
	b.ReportMetric(row.bedCPU.Seconds()/float64(row.peerings), "bed-cpu-s/peering")
	b.ReportMetric(0, "ns/op")
}

// rssPerPeering is how much the plugin's peak RSS grew per peering over the floor's.
func (row fleetRow) rssPerPeering() float64 {
	if row.peerings <= 1 {
		return 0
	}
	return (row.pluginRSS - row.floorRSS) / float64(row.peerings-1)
}

// printFleetTable prints the rows as the README's Markdown table.
func printFleetTable(rows []fleetRow) {
	if len(rows) == 0 {
		return
	}
	slices.SortStableFunc(rows, func(a, b fleetRow) int { return a.clusters - b.clusters })
	fmt.Println("\n| clusters | topology | networking | peerings | one peering (floor) | apply | × floor | no-change plan | one-peering change | destroy | plugin peak RSS | RSS per peering | plugin CPU (apply) | requests per peering: busiest server, all | clusters' CPU per peering (apply) | memory per cluster |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %d | %s | %t | %d | %.1f s | %.1f s | %.2f | %.2f s | %.1f s | %.1f s | %.0f MiB | %.2f MiB | %.1f s | %.0f, %.0f | %.2f s | %.0f MiB |\n",
			r.clusters, r.topology, r.networking, r.peerings, r.floor.Seconds(), r.apply.Seconds(), r.apply.Seconds()/r.floor.Seconds(),
			r.plan.Seconds(), r.change.Seconds(), r.destroy.Seconds(), r.pluginRSS, r.rssPerPeering(), r.pluginCPU.Seconds(), r.requests, r.requestsAll, r.bedCPU.Seconds()/float64(r.peerings), r.clusterMiB)
	}
}

// profile starts, when $LIQO_BENCH_PROFILE_DIR is set and the round is a full mesh, a CPU
// profile of every cluster's controller manager and API server; the function it returns waits
// for them and writes them.
func (f *fleetBed) profile(b *testing.B, rd fleetRound) func() {
	dir := os.Getenv(fleetProfileEnv)
	if dir == "" || rd.topology != "full-mesh" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	save := func(name string, get func() ([]byte, error)) {
		defer wg.Done()
		data, err := get()
		if err != nil {
			b.Logf("profile %s: %v", name, err)
			return
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d-%s.pprof", len(f.members), name)), data, 0o644); err != nil {
			b.Logf("profile %s: %v", name, err)
		}
	}
	query := fmt.Sprintf("seconds=%d", fleetProfileSeconds)
	for _, name := range rd.members {
		addr, err := os.ReadFile(filepath.Join(f.r.state, sandbox.PprofFile(name)))
		if err != nil {
			b.Fatalf("the pprof address of %s's controller manager: %v", name, err)
		}
		wg.Add(2)
		go save(name+"-manager", func() ([]byte, error) {
			return httpGet(b.Context(), "http://"+string(addr)+"/debug/pprof/profile?"+query)
		})
		go save(name+"-apiserver", func() ([]byte, error) {
			return f.kube[name].CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", fmt.Sprint(fleetProfileSeconds)).
				Timeout(2 * fleetProfileSeconds * time.Second).DoRaw(b.Context())
		})
	}
	return wg.Wait
}

// httpGet reads url's body, failing on a status other than 200.
func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the body: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body, nil
}
