package sandbox

// The gateway runner: one liqo-gateway process (process mode) per GatewayServer and
// GatewayClient, run inside its cluster's gateway host (network.go), restarted when it exits
// and stopped when its object goes. Which gateways run is decided per cluster (clusterwatch.go).

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

const (
	// gatewayStopGrace is how long a gateway has to remove its interface, routes and rules.
	gatewayStopGrace = 10 * time.Second
	// restartMin and restartMax bound the delay before a gateway that exited is restarted.
	restartMin, restartMax = time.Second, 30 * time.Second
)

// gatewayKey identifies one gateway: a GatewayServer or GatewayClient in a cluster.
type gatewayKey struct {
	cluster, mode, namespace, name string
}

func (k gatewayKey) String() string {
	return fmt.Sprintf("%s %s/%s on %s", k.mode, k.namespace, k.name, k.cluster)
}

// gatewayProc is one liqo-gateway process.
type gatewayProc struct {
	key      gatewayKey
	cmd      *exec.Cmd
	done     chan struct{}
	started  time.Time
	stopping bool // guarded by gatewayRunner.mu
}

// gatewayRunner runs the gateways of every cluster.
type gatewayRunner struct {
	bin, logDir, apiNetns string
	out                   io.Writer

	mu       sync.Mutex
	procs    map[gatewayKey]*gatewayProc
	restarts map[gatewayKey]int
	closed   bool // stopAll ran: nothing starts any more
	wg       sync.WaitGroup
}

// tunnelInterface names the tunnel of one gateway: unique across the sandbox's clusters (the
// UAPI socket path is shared by every network namespace) and at most 15 characters.
func tunnelInterface(k gatewayKey) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(k.cluster + "/" + k.namespace + "/" + k.name))
	return fmt.Sprintf("%s%c%08x", tunnelIfPrefix, k.mode[0], h.Sum32())
}

// tunnelCIDR gives each pair of sandbox clusters its own tunnel network, so that a cluster's
// gateway host can hold several tunnels (a hub peered with two providers): both ends of a
// tunnel compute the same one from the pair of names (the tenant namespace names the remote
// cluster). "" (the gateway's default) when the remote cluster is not a sandbox cluster.
func tunnelCIDR(k gatewayKey) string {
	name, tenant := strings.CutPrefix(k.namespace, consts.TenantNamespacePrefix)
	local, remote := slices.Index(ClusterNames, k.cluster), slices.Index(ClusterNames, name)
	if !tenant || local < 0 || remote < 0 || local == remote {
		return ""
	}
	// The pairs in order, (0,1), (0,2), ..., (1,2), ...: MaxClusters*(MaxClusters-1)/2 of them.
	lo, hi := min(local, remote), max(local, remote)
	pair := lo*(2*MaxClusters-lo-1)/2 + hi - lo - 1
	return fmt.Sprintf("169.254.%d.0/30", 20+pair)
}

// gatewayLogPath is where a gateway's output goes.
func (r *gatewayRunner) gatewayLogPath(k gatewayKey) string {
	return filepath.Join(r.logDir, fmt.Sprintf("gateway-%s-%s-%s-%s.log", k.cluster, k.mode, k.namespace, k.name))
}

// startLocked starts the gateway k in its cluster's gateway host. r.mu is held.
func (r *gatewayRunner) startLocked(ctx context.Context, w *clusterWatch, k gatewayKey) error {
	if r.closed {
		return nil
	}
	logPath := r.gatewayLogPath(k)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the log of gateway %s: %w", k, err)
	}
	ifc := tunnelInterface(k)
	args := []string{"netns", "exec", HostNetns(k.cluster), r.bin,
		"-mode", k.mode, "-kubeconfig", w.kubeconfig, "-namespace", k.namespace, "-gateway", k.name,
		"-interface", ifc, "-api-netns", r.apiNetns}
	if cidr := tunnelCIDR(k); cidr != "" {
		args = append(args, "-tunnel-cidr", cidr)
	}
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// `ip netns exec` execs the gateway in place: the gateway dies with the supervisor.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("starting gateway %s: %w", k, err)
	}
	p := &gatewayProc{key: k, cmd: cmd, done: make(chan struct{}), started: time.Now()}
	r.procs[k] = p
	fmt.Fprintf(r.out, "gateway %s started (pid %d, interface %s, log %s)\n", k, cmd.Process.Pid, ifc, logPath)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := cmd.Wait()
		_ = logf.Close()
		close(p.done)
		r.exited(ctx, w, p, err)
	}()
	return nil
}

// exited handles the end of a gateway: stopped on purpose, it is forgotten; otherwise it is
// restarted after a growing delay (reset once a gateway ran for a minute).
func (r *gatewayRunner) exited(ctx context.Context, w *clusterWatch, p *gatewayProc, err error) {
	r.mu.Lock()
	if p.stopping {
		r.forgetLocked(p)
		r.mu.Unlock()
		w.poke() // it may be wanted again (deleted and re-created)
		return
	}
	if r.restarts == nil {
		r.restarts = map[gatewayKey]int{}
	}
	if time.Since(p.started) > time.Minute {
		r.restarts[p.key] = 0
	}
	delay := restartMin << min(r.restarts[p.key], 5)
	delay = min(delay, restartMax)
	r.restarts[p.key]++
	r.mu.Unlock()
	fmt.Fprintf(r.out, "gateway %s exited (%v); restarting in %s (log %s)\n", p.key, err, delay, r.gatewayLogPath(p.key))
	select {
	case <-ctx.Done():
	case <-time.After(delay):
	}
	r.mu.Lock()
	r.forgetLocked(p)
	r.mu.Unlock()
	w.poke()
}

// forgetLocked drops an ended gateway from the running ones, unless another took its place.
// r.mu is held.
func (r *gatewayRunner) forgetLocked(p *gatewayProc) {
	if r.procs[p.key] == p {
		delete(r.procs, p.key)
	}
}

// stopLocked asks a gateway to stop (SIGTERM: it removes its interface, routes and rules) and
// kills it after gatewayStopGrace. r.mu is held.
func (r *gatewayRunner) stopLocked(p *gatewayProc) {
	p.stopping = true
	select {
	case <-p.done:
		return // waiting to restart: nothing runs
	default:
	}
	fmt.Fprintf(r.out, "stopping gateway %s (pid %d)\n", p.key, p.cmd.Process.Pid)
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		select {
		case <-p.done:
		case <-time.After(gatewayStopGrace):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
}

// stopAll stops every gateway and waits until they and the runner's goroutines are done; the
// watches' context must be cancelled first.
func (r *gatewayRunner) stopAll() error {
	r.mu.Lock()
	r.closed = true
	procs := make([]*gatewayProc, 0, len(r.procs))
	for _, p := range r.procs {
		r.stopLocked(p)
		procs = append(procs, p)
	}
	r.mu.Unlock()
	var errs []error
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(gatewayStopGrace + 5*time.Second):
			errs = append(errs, fmt.Errorf("gateway %s (pid %d) did not stop", p.key, p.cmd.Process.Pid))
		}
	}
	r.wg.Wait()
	return errors.Join(errs...)
}
