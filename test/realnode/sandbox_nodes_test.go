package realnode

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// sandboxRealNodesEnv overrides how many real nodes per cluster TestSandboxRealNodes starts
// (2 by default), to measure a sandbox of one node per cluster against it.
const sandboxRealNodesEnv = "LIQO_SANDBOX_REAL_NODES"

// TestSandboxRealNodes: the sandbox as `make sandbox REAL_NODES=2` runs it (liqo-sandbox -nodes
// real -real-nodes 2): each cluster has two Ready real nodes joined by flannel, with the chart
// installed; a pod pinned to each node runs with an address of its node's pod CIDR and the
// first node's pod reaches the second's across the nodes; `down` leaves nothing of any node:
// no network namespace (nor a process or mount holding one, so no flannel.1 or cni0 either),
// host link, iptables rule, nftables table, cgroup, mount, process or record.
func TestSandboxRealNodes(t *testing.T) {
	requireRealNodes(t)
	if _, err := testenv.FlannelBinDir(); err != nil {
		t.Skip(err)
	}
	count := 2
	if v := os.Getenv(sandboxRealNodesEnv); v != "" {
		var err error
		if count, err = strconv.Atoi(v); err != nil {
			t.Fatalf("%s=%q: %v", sandboxRealNodesEnv, v, err)
		}
	}
	helm := chart.Helm(t)
	componentArchives(t) // skips without them
	bins := testenv.BuildOnce(t, "./cmd/liqo-sandbox")
	state := filepath.Join(t.TempDir(), "sandbox")
	sb := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(bins, "liqo-sandbox"), append([]string{"-state", state, "-provider-bin", bins,
			"-nodes", "real", "-" + sandbox.RealNodesFlag, strconv.Itoa(count), "-images", os.Getenv(ImagesEnv), "-helm", helm,
			"-chart", chart.Dir(t)}, args...)...).CombinedOutput()
		return string(out), err
	}
	nftBefore := hostNFTTables(t)
	memBefore := memAvailable(t)
	start := time.Now()
	out, err := sb("up")
	envDir, _ := os.ReadFile(filepath.Join(state, "env-dir"))
	downed := false
	t.Cleanup(func() {
		if !downed {
			_, _ = sb("down")
		}
	})
	if err != nil {
		t.Fatalf("liqo-sandbox up: %v\n%s", err, out)
	}
	t.Logf("liqo-sandbox up with %d real nodes per cluster in %s:\n%s", count, time.Since(start).Round(time.Second), out)
	if count > 1 && !strings.Contains(out, fmt.Sprintf("nodes: real, %d per cluster", count)) {
		t.Errorf("up does not say the nodes are real, %d per cluster:\n%s", count, out)
	}
	nodes := map[string][]sandboxNode{}
	for _, cluster := range []string{"consumer", "provider"} {
		nodes[cluster] = checkSandboxNodes(t, filepath.Join(state, cluster+".kubeconfig"), cluster, count)
	}
	t.Logf("memory: %d MiB more in use than before up (MemAvailable); processes naming the sandbox and the nodes' pods: PSS %d MiB",
		(memBefore-memAvailable(t))>>20, sandboxPSS(strings.TrimSpace(string(envDir)))>>20)

	downed = true
	start = time.Now()
	if out, err := sb("down"); err != nil {
		t.Fatalf("liqo-sandbox down: %v\n%s", err, out)
	}
	t.Logf("liqo-sandbox down in %s", time.Since(start).Round(time.Millisecond))
	for cluster, ns := range nodes {
		for _, n := range ns {
			if left := n.leftovers(strings.TrimSpace(string(envDir))); len(left) > 0 {
				t.Errorf("%s's node %s: left after down: %q", cluster, n.name, left)
			}
		}
	}
	if after := hostNFTTables(t); !slices.Equal(after, nftBefore) {
		t.Errorf("host nftables tables %q after down, %q before up", after, nftBefore)
	}
	if left := testenv.ProcessesUsing(strings.TrimSpace(string(envDir))); len(left) > 0 {
		t.Errorf("processes of the sandbox left after down: %v", left)
	}
	for _, dir := range []string{state, strings.TrimSpace(string(envDir))} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after down (stat: %v)", dir, err)
		}
	}
}

// sandboxNode is what a sandbox's real node has on the machine: its network namespace (and the
// namespace's inode, to find any process still in it), host link and index.
type sandboxNode struct {
	name, netns, hostLink, cgroup string
	inode                         uint64
}

// checkSandboxNodes checks that the cluster has count Ready nodes, runs a pod pinned to each
// (Ready, its address in its node's pod CIDR), gets the last node's pod from the first's, and
// returns the nodes' places on the machine.
func checkSandboxNodes(t testing.TB, kubeconfig, cluster string, count int) []sandboxNode {
	t.Helper()
	kc := func(args ...string) string {
		t.Helper()
		out, err := kubectlConfig(kubeconfig, args...)
		if err != nil {
			t.Fatalf("%s: %v", cluster, err)
		}
		return out
	}
	// name, Ready, pod CIDR and InternalIP of each node.
	lines := strings.Fields(kc("get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name},{.status.conditions[?(@.type=="Ready")].status},{.spec.podCIDR},{.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}`))
	if len(lines) != count {
		t.Fatalf("%s has nodes %q, want %d", cluster, lines, count)
	}
	var nodes []sandboxNode
	var podIPs []string
	for _, line := range lines {
		f := strings.Split(line, ",")
		if len(f) != 4 || f[1] != "True" {
			t.Errorf("%s's node %q is not Ready", cluster, line)
			continue
		}
		nodes = append(nodes, nodeOnMachine(t, f[0], f[3]))
		pod := "pinned-" + strconv.Itoa(len(nodes))
		kc("run", pod, "--image="+testenv.TestHTTPImage, "--image-pull-policy=Never", "--restart=Never",
			"--overrides", fmt.Sprintf(`{"spec":{"nodeName":%q,"terminationGracePeriodSeconds":1}}`, f[0]))
		kc("wait", "pod/"+pod, "--for=condition=Ready", "--timeout=90s")
		ip := kc("get", "pod", pod, "-o", "jsonpath={.status.podIP}")
		if _, cidr, err := net.ParseCIDR(f[2]); count > 1 && (err != nil || !cidr.Contains(net.ParseIP(ip))) {
			t.Errorf("%s: pod %s on node %s has address %q, not in the node's pod CIDR %q", cluster, pod, f[0], ip, f[2])
		}
		podIPs = append(podIPs, ip)
	}
	if count > 1 && len(podIPs) == count {
		url := "http://" + net.JoinHostPort(podIPs[count-1], strconv.Itoa(testenv.TestHTTPPort)) + "/"
		if got := kc("exec", "pinned-1", "--", "/test-http", "get", url); strings.TrimSpace(got) != "pinned-"+strconv.Itoa(count) {
			t.Errorf("%s: GET %s from the first node's pod answered %q, want pinned-%d", cluster, url, got, count)
		}
	}
	return nodes
}

// kubectlConfig runs the test bed's kubectl against a kubeconfig.
func kubectlConfig(kubeconfig string, args ...string) (string, error) {
	bin, err := testenv.BinDir()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return string(out), fmt.Errorf("kubectl %v: %w: %s", args, err, stderr)
	}
	return string(out), nil
}

// uplinkPattern finds the real node's index in its host link's /30: 10.253.<k*4/256>.<k*4%256+2>.
var uplinkPattern = regexp.MustCompile(`^10\.253\.(\d+)\.(\d+)$`)

// nodeOnMachine finds the real node of address ip on the machine: index k of its uplink (the
// k-th /30 of 10.253.0.0/16), namespace lqrn<k>-*, host link lqrn<k>h.
func nodeOnMachine(t testing.TB, name, ip string) sandboxNode {
	t.Helper()
	m := uplinkPattern.FindStringSubmatch(ip)
	if m == nil {
		t.Fatalf("node %s: InternalIP %q is not a real node's uplink address", name, ip)
	}
	hi, _ := strconv.Atoi(m[1])
	lo, _ := strconv.Atoi(m[2])
	k := strconv.Itoa((hi*256 + lo - 2) / 4)
	netns, _ := filepath.Glob("/run/netns/lqrn" + k + "-*")
	if len(netns) != 1 {
		t.Fatalf("node %s: network namespaces %v, want one /run/netns/lqrn%s-*", name, netns, k)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(netns[0], &st); err != nil {
		t.Fatal(err)
	}
	return sandboxNode{name: name, netns: netns[0], hostLink: "lqrn" + k + "h", cgroup: "lqrn" + k, inode: st.Ino}
}

// leftovers lists what of the node is on the machine.
func (n sandboxNode) leftovers(envDir string) []string {
	var left []string
	if _, err := os.Lstat(n.netns); err == nil {
		left = append(left, "network namespace "+n.netns)
	}
	// A process in the node's namespace keeps it (and flannel.1, cni0, the pods' veths) alive.
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for _, p := range procs {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil && st.Ino == n.inode {
			left = append(left, "process in the node's network namespace: "+filepath.Dir(filepath.Dir(p)))
		}
	}
	if _, err := net.InterfaceByName(n.hostLink); err == nil {
		left = append(left, "link "+n.hostLink)
	}
	if out, err := exec.Command("iptables-save").Output(); err != nil || strings.Contains(string(out), " "+n.hostLink+"\"") {
		left = append(left, "host iptables rules of "+n.hostLink)
	}
	if dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + n.cgroup); len(dirs) > 0 {
		left = append(left, fmt.Sprintf("cgroups %v", dirs))
	}
	if _, err := os.Stat(filepath.Join("/run/liqo-testenv-realnodes", filepath.Base(n.netns)+".json")); err == nil {
		left = append(left, "stale-node record")
	}
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mountinfo), "\n") {
		if strings.Contains(line, " "+n.netns+" ") || envDir != "" && strings.Contains(line, envDir) {
			left = append(left, "mount "+line)
		}
	}
	return left
}

// hostNFTTables lists the host's nftables tables (none when nft is missing).
func hostNFTTables(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command("nft", "list", "tables").Output()
	if err != nil {
		return nil
	}
	tables := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(tables)
	return tables
}

// memAvailable is /proc/meminfo's MemAvailable, in bytes.
func memAvailable(t testing.TB) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			kib, _ := strconv.ParseInt(f[1], 10, 64)
			return kib << 10
		}
	}
	t.Fatal("no MemAvailable in /proc/meminfo")
	return 0
}

// sandboxPSS sums the proportional resident memory (shared pages divided among their users) of
// the processes naming envDir (API servers, etcd, the nodes' containerd, kubelet, kube-proxy,
// flanneld) and of the nodes' pods (in their cgroups).
func sandboxPSS(envDir string) int64 {
	pids := testenv.ProcessesUsing(envDir)
	roots, _ := filepath.Glob("/sys/fs/cgroup/pids/lqrn*")
	for _, r := range roots {
		_ = filepath.WalkDir(r, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != "cgroup.procs" {
				return nil //nolint:nilerr // best effort: a cgroup that went is skipped
			}
			data, _ := os.ReadFile(p)
			for _, s := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(s); err == nil && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	var total int64
	for _, pid := range pids {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				kib, _ := strconv.ParseInt(f[1], 10, 64)
				total += kib << 10
			}
		}
	}
	return total
}
