package testenv_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// fullCluster runs every optional part, so that lifecycle tests cover every process.
func fullCluster(name string) testenv.ClusterOptions {
	return testenv.ClusterOptions{
		Name: name, Scheduler: true, ControllerManager: true,
		Nodes: []testenv.NodeOptions{{Name: name + "-node"}},
	}
}

// TestStopLeavesNothing: after Stop, no process of either cluster runs, their API servers no
// longer accept connections and the Env's folder is gone.
func TestStopLeavesNothing(t *testing.T) {
	testenv.RequireLong(t, "starts real API servers")
	env, err := testenv.Start(t.Context(), fullCluster("consumer"), fullCluster("provider"))
	if err != nil {
		t.Fatal(err)
	}
	pids := testenv.ProcessesUsing(env.Dir)
	// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, per cluster.
	if len(pids) < 10 {
		t.Errorf("found %d processes using %s before Stop, want at least 10", len(pids), env.Dir)
	}
	var hosts []string
	for _, c := range env.Clusters {
		u, err := url.Parse(c.Config.Host)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, u.Host)
		if _, err := os.Stat(c.KubeconfigPath); err != nil {
			t.Errorf("kubeconfig of %s: %v", c.Name, err)
		}
	}

	if err := env.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertGone(t, env.Dir, pids, hosts)
	if err := env.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// assertGone checks that no process in pids is alive, nothing listens at hosts and dir is gone.
func assertGone(t *testing.T, dir string, pids []int, hosts []string) {
	t.Helper()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d still alive", pid)
		}
	}
	if left := testenv.ProcessesUsing(dir); len(left) > 0 {
		t.Errorf("processes still using %s: %v", dir, left)
	}
	for _, h := range hosts {
		if conn, err := net.DialTimeout("tcp", h, time.Second); err == nil {
			_ = conn.Close()
			t.Errorf("API server address %s still accepts connections", h)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("folder %s still exists (stat: %v)", dir, err)
	}
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

const (
	childModeEnv = "TESTENV_CHILD_MODE" // "panic" or "hang"
	childDirEnv  = "TESTENV_CHILD_REPORT"
)

// TestChildProcess is not a test of its own: the lifecycle tests below run it in a child
// process of the test binary, where it starts a cluster, reports the cluster's folder, and then
// panics or hangs until it is killed.
func TestChildProcess(t *testing.T) {
	mode := os.Getenv(childModeEnv)
	if mode == "" {
		t.Skip("helper for TestCleanupOnPanic and TestCleanupOnKill")
	}
	env := testenv.New(t, fullCluster("child"))
	if err := os.WriteFile(os.Getenv(childDirEnv), []byte(env.Dir), 0o600); err != nil {
		t.Fatal(err)
	}
	switch mode {
	case "panic":
		panic("child test panics on purpose")
	case "hang":
		time.Sleep(10 * time.Minute)
	}
}

// runChild starts TestChildProcess in mode and returns its command and the cluster's folder,
// once the child reported it.
func runChild(t *testing.T, mode string) (*exec.Cmd, string) {
	t.Helper()
	report := filepath.Join(t.TempDir(), "dir")
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.v")
	// The child's temp folder is the test's: what a killed child cannot remove (envtest's own
	// temp folders among it) goes with the test.
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode, childDirEnv+"="+report, "TMPDIR="+t.TempDir())
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		data, err := os.ReadFile(report)
		dir = string(data)
		return err == nil && dir != "", nil
	})
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child did not report its cluster folder: %v\n%s", err, out.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("child output:\n%s", out.String())
		}
	})
	return cmd, dir
}

// TestCleanupOnPanic: a test that panics after starting clusters leaves no process and no folder.
func TestCleanupOnPanic(t *testing.T) {
	testenv.RequireLong(t, "starts real API servers")
	cmd, dir := runChild(t, "panic")
	pids := testenv.ProcessesUsing(dir)
	if len(pids) == 0 {
		t.Fatal("child's cluster has no processes")
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("child test passed, want a panic")
	}
	assertGone(t, dir, pids, nil)
}

// TestCleanupOnKill: when the test binary is killed outright (as `go test -timeout` does),
// the kernel ends its clusters' processes (parent-death signal). The folder stays in the OS
// temp folder, as nothing ran to remove it.
func TestCleanupOnKill(t *testing.T) {
	testenv.RequireLong(t, "starts real API servers")
	cmd, dir := runChild(t, "hang")
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	pids := testenv.ProcessesUsing(dir)
	if len(pids) < 5 {
		t.Fatalf("child's cluster has %d processes, want at least 5", len(pids))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		for _, pid := range pids {
			if alive(pid) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("processes of the killed test still alive 10s later: %v", testenv.ProcessesUsing(dir))
	}
}
