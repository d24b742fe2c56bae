package upstream

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// Process is an upstream component running as a process against a test-bed cluster.
type Process struct {
	// Name is the component's binary and the cluster's name, for messages.
	Name string
	// Log is the file its standard output and error go to.
	Log string
	// Started is when it was started.
	Started time.Time

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start runs component (a binary of BinDir) with args against cl until the test ends: its
// kubeconfig comes through KUBECONFIG (upstream's binaries register controller-runtime's
// --kubeconfig flag on Go's flag set, which they do not parse) and the kernel kills it if the
// test process dies. When the test fails, the end of its log is logged.
func Start(tb testing.TB, cl *testenv.Cluster, component string, args ...string) *Process {
	tb.Helper()
	return start(tb, cl, component, nil, nil, args...)
}

// start is Start with more environment variables env and, when run as root, private folders:
// folders the process sees empty and its own, as a container sees its /tmp (without root, the
// host's).
func start(tb testing.TB, cl *testenv.Cluster, component string, env, private []string, args ...string) *Process {
	tb.Helper()
	p := &Process{Name: component + " of " + cl.Name, Log: filepath.Join(tb.TempDir(), component+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.Log)
	if err != nil {
		tb.Fatalf("upstream %s: %v", p.Name, err)
	}
	p.cmd = exec.Command(filepath.Join(BinDir(tb), component), args...)
	if len(private) > 0 && os.Geteuid() == 0 {
		// As in a pod, these folders are the process's own: an empty tmpfs in a mount
		// namespace of its own (the binary then runs as "$0" of the shell).
		script := ""
		for _, d := range private {
			script += fmt.Sprintf("mkdir -p %[1]q && mount -t tmpfs tmpfs %[1]q && ", d)
		}
		p.cmd = exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script + `exec "$0" "$@"`,
			filepath.Join(BinDir(tb), component)}, args...)...)
	}
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+cl.KubeconfigPath, "POD_NAMESPACE="+Namespace)
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.Started = time.Now()
	if err := p.cmd.Start(); err != nil {
		_ = logf.Close()
		tb.Fatalf("starting upstream %s: %v", p.Name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	tb.Cleanup(func() {
		p.stop()
		if tb.Failed() {
			tb.Logf("upstream %s, log %s ends:\n%s", p.Name, p.Log, p.tail(40))
		}
	})
	return p
}

// stop sends SIGTERM and waits, then SIGKILL after 10s.
func (p *Process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// tail returns the last n lines of the log.
func (p *Process) tail(n int) string {
	data, _ := os.ReadFile(p.Log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Logged reports whether the log holds s.
func (p *Process) Logged(s string) bool {
	data, _ := os.ReadFile(p.Log)
	return strings.Contains(string(data), s)
}

// RSSKiB returns the process's resident set size in KiB (VmRSS of /proc/<pid>/status).
func (p *Process) RSSKiB() (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("reading the status of upstream %s: %w", p.Name, err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				return 0, fmt.Errorf("VmRSS of upstream %s: %w", p.Name, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("upstream %s: no VmRSS in its status", p.Name)
}

// startTimeout is how long a component may take to become ready.
const startTimeout = 2 * time.Minute

// waitUntil polls ready until it holds, failing the test if the process exits first or
// startTimeout passes; what names the state waited for.
func (p *Process) waitUntil(tb testing.TB, what string, ready func(ctx context.Context) bool) {
	tb.Helper()
	testenv.Poll(tb, "upstream "+p.Name+" "+what, startTimeout, func(ctx context.Context) (bool, error) {
		if done, err := p.Exited(); done {
			return false, fmt.Errorf("upstream %s exited (%w); its log ends:\n%s", p.Name, err, p.tail(20))
		}
		return ready(ctx), nil
	})
}

// freeAddr returns 127.0.0.1:<a free port> for a listener of component.
func freeAddr(tb testing.TB, component string) string {
	tb.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		tb.Fatalf("a port for upstream %s: %v", component, err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// StartControllerManager runs upstream's controller manager for cl with the arguments the chart
// rendered in objs (Render) gives it, its listeners moved to free ports of 127.0.0.1 (metrics
// off; the webhook port is unused: it registers no webhooks), plus extra, and waits until its
// readiness probe answers.
func StartControllerManager(tb testing.TB, cl *testenv.Cluster, objs []*unstructured.Unstructured, extra ...string) *Process {
	tb.Helper()
	probe := freeAddr(tb, ControllerManager)
	_, webhookPort, _ := strings.Cut(freeAddr(tb, ControllerManager), ":")
	args := append(Args(tb, objs, "liqo-controller-manager"),
		"--metrics-address=0", "--health-probe-address="+probe, "--webhook-port="+webhookPort)
	p := Start(tb, cl, ControllerManager, append(args, extra...)...)
	p.waitUntil(tb, "ready", func(ctx context.Context) bool { return testenv.ProbeOK(ctx, probe, "/readyz") })
	return p
}

// StartCRDReplicator runs upstream's CRD replicator for cl with the arguments the chart rendered
// in objs gives it (metrics off), plus extra, and waits until it logs that its manager starts
// (it has no probe).
func StartCRDReplicator(tb testing.TB, cl *testenv.Cluster, objs []*unstructured.Unstructured, extra ...string) *Process {
	tb.Helper()
	args := append(Args(tb, objs, "liqo-crd-replicator"), "--metrics-address=0")
	p := Start(tb, cl, CRDReplicator, append(args, extra...)...)
	p.waitUntil(tb, "started", func(context.Context) bool { return p.Logged("Starting crdReplicator manager") })
	return p
}

// Stop ends the process (SIGTERM, then SIGKILL after 10 s) before the test ends.
func (p *Process) Stop() { p.stop() }
