package testenv_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// realNodeReport is what TestRealNodeChildProcess tells its parent about one real node.
type realNodeReport struct {
	Dir, Netns, HostLink, Cgroup string
	PodNetns                     []string
	// NetnsInode is the node's network namespace's inode: a process still in it keeps it, and
	// the links in it (flannel.1, cni0, the pods' veths), alive after its file is gone.
	NetnsInode uint64
}

const (
	realNodeReportEnv = "LIQO_TESTENV_REALNODE_REPORT"
	// realNodeCountEnv is how many real nodes the child starts: 1 (the bridge) by default, more
	// with flannel.
	realNodeCountEnv = "LIQO_TESTENV_REALNODE_COUNT"
)

// TestRealNodeChildProcess is not a test of its own: TestRealNodeReapAfterKill and
// TestRealNodesFlannelReapAfterKill run it in a child process, where it starts a cluster with
// real nodes and a Running pod on each, reports where they are, and hangs until it is killed.
func TestRealNodeChildProcess(t *testing.T) {
	report := os.Getenv(realNodeReportEnv)
	if report == "" {
		t.Skip("helper for TestRealNodeReapAfterKill")
	}
	count, _ := strconv.Atoi(os.Getenv(realNodeCountEnv))
	env := testenv.New(t, testenv.ClusterOptions{Name: "killed", RealNode: &testenv.RealNodeOptions{}, RealNodes: count})
	c := env.Cluster("killed")
	var reports []realNodeReport
	for i, n := range c.RealNodes {
		waitRunning(t, c, createOn(t, c, "web"+strconv.Itoa(i), n.Name))
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join("/run/netns", n.Netns), &st); err != nil {
			t.Fatal(err)
		}
		reports = append(reports, realNodeReport{Dir: env.Dir, Netns: n.Netns, HostLink: strings.Split(n.Netns, "-")[0] + "h",
			Cgroup: "/sys/fs/cgroup/pids/" + strings.Split(n.Netns, "-")[0], PodNetns: n.PodNetns(t.Context()), NetnsInode: st.Ino})
	}
	data, err := json.Marshal(reports)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report, data, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Minute)
}

// TestRealNodeReapAfterKill: a test killed outright leaves its real node's pods running (their
// shims outlive containerd) and its network in place; ReapStaleRealNodes (which every real
// node's start runs first) removes all of it.
func TestRealNodeReapAfterKill(t *testing.T) {
	needRealNode(t)
	reapAfterKill(t, 1)
}

// TestRealNodesFlannelReapAfterKill: the same with two real nodes and flannel: after the kill
// each node's pods, network namespace (holding flannel.1 and cni0) and host link are left;
// ReapStaleRealNodes removes them on every node, flanneld included.
func TestRealNodesFlannelReapAfterKill(t *testing.T) {
	needRealNode(t)
	if _, err := testenv.FlannelBinDir(); err != nil {
		t.Skipf("skipping the flannel test: %v", err)
	}
	reapAfterKill(t, 2)
}

// reapAfterKill starts a cluster of count real nodes in a child process, kills it, checks that
// each node is left on the machine, reaps, and checks that nothing of any node is.
func reapAfterKill(t *testing.T, count int) {
	t.Helper()
	start := time.Now()
	var rs []realNodeReport
	release := func() {}
	// Held from before the kill until checked: another package's real node start (go test
	// runs packages in parallel) would reap the killed child's nodes at once.
	testenv.KillChildAfterReport(t, "TestRealNodeChildProcess", realNodeReportEnv, func(report []byte) bool {
		if json.Unmarshal(report, &rs) != nil {
			return false
		}
		netns := make([]string, len(rs))
		for i, r := range rs {
			netns[i] = r.Netns
		}
		var err error
		if release, err = testenv.HoldStaleRealNodes(netns...); err != nil {
			t.Error(err)
		}
		return true
	}, realNodeCountEnv+"="+strconv.Itoa(count))
	t.Cleanup(release)
	if len(rs) != count {
		t.Fatalf("the child reported %d real nodes, want %d", len(rs), count)
	}
	for _, r := range rs {
		left := strings.Join(machineLeftovers(t, r), "\n")
		if !strings.Contains(left, "cgroup") || !strings.Contains(left, "network namespace") || !strings.Contains(left, "process in the network namespace") {
			t.Errorf("after the kill, want node %s's pods and network left; found %q", r.Netns, left)
		}
	}

	release()
	reap := time.Now()
	if err := testenv.ReapStaleRealNodes(t.Context()); err != nil {
		t.Fatalf("reaping: %v", err)
	}
	t.Logf("%d real nodes started, killed and reaped in %s (reaping %s)", count, time.Since(start).Round(time.Millisecond), time.Since(reap).Round(time.Millisecond))
	for _, r := range rs {
		if left := machineLeftovers(t, r); len(left) > 0 {
			t.Errorf("after reaping, node %s left: %q", r.Netns, left)
		}
	}
}

// machineLeftovers lists what of the reported node is on the machine.
func machineLeftovers(t *testing.T, r realNodeReport) []string {
	t.Helper()
	var left []string
	if pids := testenv.ProcessesUsing(r.Dir); len(pids) > 0 {
		left = append(left, "processes naming the folder")
	}
	if _, err := os.Stat(r.Cgroup); err == nil {
		left = append(left, "cgroup "+r.Cgroup)
	}
	for _, p := range append([]string{filepath.Join("/run/netns", r.Netns)}, r.PodNetns...) {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			left = append(left, "network namespace "+p)
		}
	}
	if pids := processesInNetns(r.NetnsInode); len(pids) > 0 {
		left = append(left, fmt.Sprintf("process in the network namespace (keeping its links): %v", pids))
	}
	if _, err := os.Stat("/sys/class/net/" + r.HostLink); err == nil {
		left = append(left, "link "+r.HostLink)
	}
	if out, err := exec.Command("iptables-save").Output(); err != nil || strings.Contains(string(out), " "+r.HostLink+"\"") {
		left = append(left, "iptables rules")
	}
	if _, err := os.Stat("/var/lib/kubelet/device-plugins/kubelet.sock"); err == nil {
		left = append(left, "kubelet's device-plugin socket")
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mountinfo), "\n") {
		if strings.Contains(line, r.Dir) {
			left = append(left, "mount "+line)
		}
	}
	return left
}

// processesInNetns returns the processes whose network namespace has the given inode.
func processesInNetns(inode uint64) []string {
	var pids []string
	links, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for _, l := range links {
		var st syscall.Stat_t
		if syscall.Stat(l, &st) == nil && st.Ino == inode {
			pids = append(pids, filepath.Base(filepath.Dir(filepath.Dir(l))))
		}
	}
	return pids
}
