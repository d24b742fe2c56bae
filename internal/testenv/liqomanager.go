package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// LiqoManager is our controller manager (cmd/liqo-controller-manager) running as a process for
// one cluster of a test.
type LiqoManager struct {
	// Log is the file its output goes to.
	Log string

	proc *process
}

// StartLiqoManager builds our controller manager once per test process (BuildOnce) and runs it
// for cl until the test ends: cluster ID cl.Name, cl's admin kubeconfig, its readiness probe on
// a free port of 127.0.0.1, metrics off, plus args. It returns once the probe answers, and logs
// the end of its log when the test failed.
func StartLiqoManager(tb testing.TB, cl *Cluster, args ...string) *LiqoManager {
	tb.Helper()
	bin := filepath.Join(BuildOnce(tb, "./cmd/liqo-controller-manager"), "liqo-controller-manager")
	port, err := FreePort()
	if err != nil {
		tb.Fatalf("a probe port for the controller manager of %s: %v", cl.Name, err)
	}
	probe := fmt.Sprintf("127.0.0.1:%d", port)
	all := append([]string{"--kubeconfig", cl.KubeconfigPath, "--cluster-id", cl.Name,
		"--health-probe-bind-address", probe, "--metrics-bind-address", "0"}, args...)
	p, err := startProcess("liqo-controller-manager-"+cl.Name, tb.TempDir(), bin, all...)
	if err != nil {
		tb.Fatalf("controller manager of %s: %v", cl.Name, err)
	}
	m := &LiqoManager{Log: p.log.Name(), proc: p}
	tb.Cleanup(func() {
		if err := p.stop(10 * time.Second); err != nil {
			tb.Errorf("stopping the controller manager of %s: %v", cl.Name, err)
		}
		if tb.Failed() {
			tb.Logf("controller manager of %s, log %s ends:\n%s", cl.Name, m.Log, p.logTail())
		}
	})
	Poll(tb, "the controller manager of "+cl.Name+" to be ready", 2*time.Minute, func(ctx context.Context) (bool, error) {
		if done, err := p.exited(); done {
			tb.Fatal(&exitedError{what: "controller manager of " + cl.Name, name: bin, log: m.Log, tail: p.logTail(), err: err})
		}
		return ProbeOK(ctx, probe, "/readyz"), nil
	})
	return m
}
