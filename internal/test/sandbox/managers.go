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
	"strconv"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// managerReadyTimeout bounds a controller manager's start (CRDs, identity, caches).
const managerReadyTimeout = 2 * time.Minute

// manager is one cluster's liqo-controller-manager, a child process of the supervisor.
type manager struct {
	cluster string
	args    []string // the manager's flags
	cmd     *exec.Cmd
	iso     *isolation // the forwards of an isolated manager (isolate.go), or nil
	done    chan struct{}
	err     error
}

// managerArgs are the flags of a cluster's controller manager in the sandbox: the cluster's
// name is its ID, its pod CIDR is the one its KWOK nodes use (and then its further pod CIDRs
// extra, if any), its external CIDR its own (externalCIDR), virtual nodes run in-process, and
// the API server calls the admission webhooks at a local address.
func managerArgs(c *testenv.Cluster, opts testenv.ClusterOptions, extra []string, probeAddr, webhookAddr string) []string {
	// One "--flag=value" argument each, as in the chart: tools read the flags back from the
	// installation's record (recordInstallation) in that form.
	args := []string{"--kubeconfig=" + c.KubeconfigPath, "--cluster-id=" + c.Name, "--api-server-address-override=" + c.Config.Host,
		"--health-probe-bind-address=" + probeAddr, "--metrics-bind-address=0",
		"--webhook-bind-address=" + webhookAddr, "--webhook-url=https://" + webhookAddr}
	if opts.PodCIDR != "" {
		args = append(args, "--pod-cidr="+opts.PodCIDR)
	}
	for _, cidr := range extra {
		args = append(args, "--pod-cidr="+cidr)
	}
	if cidr := externalCIDR(opts.Name); cidr != "" {
		args = append(args, "--external-cidr="+cidr)
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
		args := managerArgs(c, o, s.ExtraPodCIDRs[o.Name], probe, webhook)
		if !s.isolated(c.Name) {
			if args, err = s.withPprof(c.Name, args); err != nil {
				return managers, err
			}
		}
		cmd := exec.Command(s.ManagerBin, args...)
		var iso *isolation
		if s.isolated(c.Name) {
			// ip execs the manager in the pod namespace: the same process, so it still dies
			// with the supervisor.
			cmd = exec.Command("ip", append([]string{"netns", "exec", PodNetns(c.Name), s.ManagerBin}, args...)...)
			if iso, err = s.isolate(c, probe, webhook); err != nil {
				_ = logf.Close()
				return managers, err
			}
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		// The manager dies with the supervisor, whatever kills it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			_ = logf.Close()
			return managers, errors.Join(fmt.Errorf("starting the controller manager of %s: %w", c.Name, err), iso.close())
		}
		m := &manager{cluster: c.Name, args: args, cmd: cmd, iso: iso, done: make(chan struct{})}
		go func() {
			m.err = cmd.Wait()
			_ = logf.Close()
			close(m.done)
		}()
		managers = append(managers, m)
		probes[c.Name] = probe
		where := ""
		if iso != nil {
			where = " in network namespace " + PodNetns(c.Name)
		}
		fmt.Fprintf(s.Out, "controller manager of %s started%s (pid %d, log %s)\n", c.Name, where, cmd.Process.Pid, logPath)
	}
	for _, m := range managers {
		if err := waitReady(ctx, m, probes[m.cluster]); err != nil {
			logPath := filepath.Join(logDir, m.cluster+"-controller-manager.log")
			return managers, fmt.Errorf("the controller manager of %s (log %s): %w; its log ends:\n%s", m.cluster,
				logPath, err, testenv.LogTail(logPath))
		}
	}
	for _, m := range managers {
		if err := recordInstallation(ctx, env.Cluster(m.cluster), m.args, m.cmd.Process.Pid); err != nil {
			return managers, err
		}
	}
	return managers, nil
}

// recordInstallation writes, in the cluster's liqo namespace, the controller manager's
// Deployment as the chart would install it (labels, container name, image of this version,
// flags) but with no replica: the manager runs as a process of the sandbox (pid). Tools that
// discover an installation through it, such as upstream liqoctl (`liqoctl info`: version,
// flags, API server), then find this one.
func recordInstallation(ctx context.Context, c *testenv.Cluster, args []string, pid int) error {
	labels := map[string]string{consts.AppNameLabel: consts.ControllerManagerApp, consts.AppComponentLabel: consts.ControllerManagerApp,
		"app.kubernetes.io/part-of": "liqo"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: consts.ControllerManagerDeployment, Labels: labels,
			Annotations: map[string]string{sandboxServesAnnotation: fmt.Sprintf("the controller manager runs as process %d of the sandbox's supervisor, "+
				"not as this Deployment's pods", pid)}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{consts.AppNameLabel: consts.ControllerManagerApp,
				consts.AppComponentLabel: consts.ControllerManagerApp}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: consts.ControllerManagerApp,
					Image: version.ControllerManagerImage, Args: args}}},
			},
		},
	}
	if err := c.Client.Create(ctx, dep); err != nil {
		return fmt.Errorf("recording the controller manager's installation in %s: %w", c.Name, err)
	}
	return nil
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

// stopManagers ends the managers gracefully (SIGTERM, then SIGKILL after 20 s), then the
// forwards of the isolated ones.
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
		errs = append(errs, m.iso.close())
	}
	return errors.Join(errs...)
}

// freeAddr returns a free loopback address.
func freeAddr() (string, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// PprofFile names the file in the state folder that holds the address of a cluster's
// controller manager's /debug/pprof endpoints (not for an isolated one).
func PprofFile(cluster string) string { return cluster + "-controller-manager.pprof" }

// withPprof adds --pprof-bind-address at a free local address to a controller manager's
// arguments and writes the address to PprofFile, for profiles (BenchmarkFleet).
func (s *Sandbox) withPprof(cluster string, args []string) ([]string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.StateDir, PprofFile(cluster)), []byte(addr), 0o600); err != nil {
		return nil, fmt.Errorf("writing the pprof address of %s's controller manager: %w", cluster, err)
	}
	return append(args, "--pprof-bind-address="+addr), nil
}
