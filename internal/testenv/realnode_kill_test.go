package testenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
)

// realNodeReport is what TestRealNodeChildProcess tells its parent.
type realNodeReport struct {
	Dir, Netns, HostLink, Cgroup string
	PodNetns                     []string
}

const realNodeReportEnv = "LIQO_TESTENV_REALNODE_REPORT"

// TestRealNodeChildProcess is not a test of its own: TestRealNodeReapAfterKill runs it in a
// child process, where it starts a cluster with a real node and a Running pod, reports where
// they are, and hangs until it is killed.
func TestRealNodeChildProcess(t *testing.T) {
	report := os.Getenv(realNodeReportEnv)
	if report == "" {
		t.Skip("helper for TestRealNodeReapAfterKill")
	}
	env := testenv.New(t, testenv.ClusterOptions{Name: "killed", RealNode: &testenv.RealNodeOptions{}})
	c := env.Cluster("killed")
	waitRunning(t, c, createDeployment(t, c))
	n := c.RealNode
	data, err := json.Marshal(realNodeReport{Dir: env.Dir, Netns: n.Netns, HostLink: strings.Split(n.Netns, "-")[0] + "h",
		Cgroup: "/sys/fs/cgroup/pids/" + strings.Split(n.Netns, "-")[0], PodNetns: n.PodNetns(t.Context())})
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
	reportPath := filepath.Join(t.TempDir(), "report")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRealNodeChildProcess$", "-test.v")
	// A short temp folder: the node's sockets live in it (t.TempDir's paths are too long).
	tmp, err := os.MkdirTemp("", "rk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	cmd.Env = append(os.Environ(), realNodeReportEnv+"="+reportPath, "TMPDIR="+tmp)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var r realNodeReport
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-exited:
			return false, errors.New("the child exited")
		default:
		}
		data, err := os.ReadFile(reportPath)
		return err == nil && json.Unmarshal(data, &r) == nil, nil
	})
	if err != nil {
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("child did not report its real node: %v\n%s", err, out)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	time.Sleep(time.Second) // the parent-death signal reaches kubelet, kube-proxy, containerd
	left := machineLeftovers(t, r)
	if !strings.Contains(strings.Join(left, "\n"), "cgroup") || !strings.Contains(strings.Join(left, "\n"), "network namespace") {
		t.Errorf("after the kill, want the pods and the network left; found %q", left)
	}

	if err := testenv.ReapStaleRealNodes(t.Context()); err != nil {
		t.Fatalf("reaping: %v", err)
	}
	if left := machineLeftovers(t, r); len(left) > 0 {
		t.Errorf("after reaping, left: %q", left)
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
