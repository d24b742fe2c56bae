package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
)

// managerReadyTimeout bounds a controller manager's start (CRDs, identity, caches).
const managerReadyTimeout = 2 * time.Minute

// manager is one cluster's liqo-controller-manager, a child process of the supervisor.
type manager struct {
	cluster string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// managerArgs are the flags of a cluster's controller manager in the sandbox: the cluster's
// name is its ID, its pod CIDR is the one its KWOK nodes use, virtual nodes run in-process,
// and the API server calls the admission webhooks at a local address.
func managerArgs(c *testenv.Cluster, opts testenv.ClusterOptions, probeAddr, webhookAddr string) []string {
	args := []string{"--kubeconfig", c.KubeconfigPath, "--cluster-id", c.Name,
		"--health-probe-bind-address", probeAddr, "--metrics-bind-address", "0",
		"--webhook-bind-address", webhookAddr, "--webhook-url", "https://" + webhookAddr}
	if opts.PodCIDR != "" {
		args = append(args, "--pod-cidr", opts.PodCIDR)
	}
	return args
}

// startManagers starts a controller manager for every cluster and waits until each is ready.
// Their logs go to <state>/logs/<cluster>-controller-manager.log.
func (s *Sandbox) startManagers(ctx context.Context, env *testenv.Env, opts []testenv.ClusterOptions) ([]*manager, error) {
	if _, err := os.Stat(s.ManagerBin); err != nil {
		return nil, fmt.Errorf("the controller manager binary %s: %w (make sandbox builds it)", s.ManagerBin, err)
	}
	logDir := filepath.Join(s.StateDir, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", logDir, err)
	}
	var managers []*manager
	probes := map[string]string{}
	for _, o := range opts {
		c := env.Cluster(o.Name)
		probe, err := freeAddr()
		if err != nil {
			return managers, err
		}
		webhook, err := freeAddr()
		if err != nil {
			return managers, err
		}
		logPath := filepath.Join(logDir, c.Name+"-controller-manager.log")
		logf, err := os.Create(logPath)
		if err != nil {
			return managers, fmt.Errorf("creating %s: %w", logPath, err)
		}
		cmd := exec.Command(s.ManagerBin, managerArgs(c, o, probe, webhook)...)
		cmd.Stdout, cmd.Stderr = logf, logf
		// The manager dies with the supervisor, whatever kills it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			_ = logf.Close()
			return managers, fmt.Errorf("starting the controller manager of %s: %w", c.Name, err)
		}
		m := &manager{cluster: c.Name, cmd: cmd, done: make(chan struct{})}
		go func() {
			m.err = cmd.Wait()
			_ = logf.Close()
			close(m.done)
		}()
		managers = append(managers, m)
		probes[c.Name] = probe
		fmt.Fprintf(s.Out, "controller manager of %s started (pid %d, log %s)\n", c.Name, cmd.Process.Pid, logPath)
	}
	for _, m := range managers {
		if err := waitReady(ctx, m, probes[m.cluster]); err != nil {
			return managers, fmt.Errorf("the controller manager of %s (log %s): %w", m.cluster,
				filepath.Join(logDir, m.cluster+"-controller-manager.log"), err)
		}
	}
	return managers, nil
}

// waitReady polls a manager's readiness endpoint.
func waitReady(ctx context.Context, m *manager, probe string) error {
	ctx, cancel := context.WithTimeout(ctx, managerReadyTimeout)
	defer cancel()
	for {
		select {
		case <-m.done:
			return fmt.Errorf("exited before it was ready: %w", m.err)
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s: %w", managerReadyTimeout, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probe+"/readyz", nil)
		if err != nil {
			return fmt.Errorf("probe request: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
}

// stopManagers ends the managers gracefully (SIGTERM, then SIGKILL after 20 s).
func stopManagers(managers []*manager) error {
	var errs []error
	for _, m := range managers {
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
	}
	for _, m := range managers {
		select {
		case <-m.done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.done
			errs = append(errs, fmt.Errorf("the controller manager of %s did not stop within 20s", m.cluster))
		}
	}
	return errors.Join(errs...)
}

// freeAddr returns a free loopback address.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}
