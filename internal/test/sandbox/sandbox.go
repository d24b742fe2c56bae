// Package sandbox runs local clusters (consumer and provider, and provider-2 on request) for the demo and the
// end-to-end tests: a supervisor process owns them (their processes die with it), and
// writes their kubeconfigs and a Terraform CLI configuration into a state folder.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// Files in the state folder.
const (
	pidFile      = "supervisor.pid"
	readyFile    = "ready"
	envDirFile   = "env-dir"
	logFile      = "sandbox.log"
	cliConfig    = "terraformrc"
	kubeconfigFn = "%s.kubeconfig"
)

// DemoNamespace is the consumer's namespace that the examples offload.
const DemoNamespace = "demo"

// MaxClusters is the most clusters a sandbox runs (with KWOK nodes; the real-node sandbox runs
// two, realNodesMissing).
const MaxClusters = 16

// ClusterNames are the sandbox's clusters, in order: a sandbox of N clusters runs the first N
// (two by default; the fleet example uses three, the fleet benchmark up to MaxClusters): consumer,
// provider, then provider-2 to provider-15.
var ClusterNames = clusterNames(MaxClusters)

// clusterNames names n sandbox clusters (ClusterNames).
func clusterNames(n int) []string {
	names := []string{"consumer", "provider"}
	for i := 2; i < n; i++ {
		names = append(names, fmt.Sprintf("provider-%d", i))
	}
	return names[:n]
}

// clusters says what each of the first n sandbox clusters runs: the providers have KWOK nodes
// to run the pods offloaded to them; all have a scheduler and a controller manager (CSR
// signer, garbage collector, namespace deletion). The i-th cluster's pod CIDR is 10.(200+i).0.0/16,
// and each node has a /24 of it from x.x.1.0 on, as a node IPAM controller would give: x.x.0.0/24
// is the sandbox's network (the stand-in pod and its gateway host, network.go). The provider has
// two nodes, every other cluster one; the consumer's is the smallest.
func clusters(n int) []testenv.ClusterOptions {
	out := make([]testenv.ClusterOptions, 0, n)
	for i, name := range clusterNames(n) {
		podCIDR := fmt.Sprintf("10.%d.0.0/16", 200+i)
		node := func(j int) testenv.NodeOptions {
			return testenv.NodeOptions{Name: fmt.Sprintf("%s-node-%d", name, j), CPU: "8", Memory: "16Gi",
				PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 200+i, j)}
		}
		nodes := []testenv.NodeOptions{node(1)}
		switch name {
		case "consumer":
			nodes[0].CPU, nodes[0].Memory = "4", "8Gi"
		case "provider":
			nodes = append(nodes, node(2))
		}
		out = append(out, testenv.ClusterOptions{Name: name, Scheduler: true, ControllerManager: true, KubeletAPI: true,
			PodCIDR: podCIDR, Nodes: nodes})
	}
	return out
}

// clusterOptions returns what the named sandbox cluster runs (clusters).
func clusterOptions(cluster string) (testenv.ClusterOptions, error) {
	for _, o := range clusters(len(ClusterNames)) {
		if o.Name == cluster {
			return o, nil
		}
	}
	return testenv.ClusterOptions{}, fmt.Errorf("unknown sandbox cluster %q", cluster)
}

// externalCIDR is the named sandbox cluster's external CIDR, each set explicitly and distinct
// (the first is upstream's default), 10.(70+i).0.0/16 for the i-th cluster up to the tenth, then
// 10.(150+i).0.0/16 (10.80.0.0/16 is the internal CIDR, consts.DefaultInternalCIDR): peering
// two of them remaps no external CIDR. Empty for an unknown cluster.
func externalCIDR(cluster string) string {
	i := slices.Index(ClusterNames, cluster)
	switch {
	case i < 0:
		return ""
	case i < 10:
		return fmt.Sprintf("10.%d.0.0/16", 70+i)
	default:
		return fmt.Sprintf("10.%d.0.0/16", 150+i)
	}
}

// Sandbox is a state folder and the programs it uses.
type Sandbox struct {
	// StateDir holds the kubeconfigs, the Terraform CLI configuration and the supervisor's files.
	StateDir string
	// ProviderBinDir is the folder holding terraform-provider-liqo, for dev_overrides.
	ProviderBinDir string
	// ManagerBin is the liqo-controller-manager binary run for each cluster.
	ManagerBin string
	// GatewayBin is the liqo-gateway binary run for each gateway when the supervisor is root
	// (gateways.go, network.go); without it, networking is disabled.
	GatewayBin string
	// Clusters is how many clusters run (2 to MaxClusters with KWOK nodes, 2 with real nodes;
	// 0 means 2).
	Clusters int
	// Nodes is what the clusters' nodes are: NodesKWOK (also when empty) or NodesReal (see
	// ResolveNodes, realnodes.go).
	Nodes string
	// RealNodes is how many real nodes each cluster has with NodesReal (0 means 1): more than
	// one run flannel as the clusters' pod network (`make flannel`, testenv.FlannelBinDir).
	RealNodes int
	// Images holds the component image archives (`make images`), for real nodes.
	Images string
	// Helm is the helm binary, and Chart the chart's folder, for real nodes.
	Helm, Chart string
	// KWOKConfigs gives clusters' KWOK more configuration files (ClusterLogs, ClusterExec, ...):
	// a cluster's name to its files (kwokconfigs.go).
	KWOKConfigs map[string][]string
	// ExtraPodCIDRs gives clusters pod CIDRs besides their own: a cluster's name to its further
	// pod CIDRs (podcidrs.go; KWOK nodes only). None by default.
	ExtraPodCIDRs map[string][]string
	// Isolate are the clusters whose controller manager runs in the cluster's stand-in pod
	// network namespace, reaching no other cluster's API server but through the tunnel
	// (isolate.go; KWOK nodes and networking only). None by default.
	Isolate []string
	// Out receives progress and instructions.
	Out io.Writer
}

// KubeconfigPath returns the path of the named cluster's kubeconfig.
func (s *Sandbox) KubeconfigPath(cluster string) string {
	return filepath.Join(s.StateDir, fmt.Sprintf(kubeconfigFn, cluster))
}

// CLIConfigPath returns the path of the Terraform CLI configuration with dev_overrides.
func (s *Sandbox) CLIConfigPath() string { return filepath.Join(s.StateDir, cliConfig) }

// Up starts the supervisor (self with args, e.g. the sandbox command's "serve") in the
// background unless it runs already, waits until the clusters are up, and prints how to use them.
func (s *Sandbox) Up(ctx context.Context, self string, args ...string) error {
	if pid, ok := s.runningPID(); ok {
		fmt.Fprintf(s.Out, "sandbox already running (supervisor pid %d)\n", pid)
		s.printUsage()
		return nil
	}
	if err := os.MkdirAll(s.StateDir, 0o700); err != nil {
		return fmt.Errorf("creating sandbox state folder: %w", err)
	}
	_ = os.Remove(filepath.Join(s.StateDir, readyFile))
	logf, err := os.Create(filepath.Join(s.StateDir, logFile))
	if err != nil {
		return fmt.Errorf("creating sandbox log: %w", err)
	}
	defer func() { _ = logf.Close() }()
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives this command and its terminal
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting sandbox supervisor: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fmt.Fprintf(s.Out, "starting clusters %s (supervisor pid %d, log %s)...\n",
		strings.Join(s.names(), ", "), cmd.Process.Pid, filepath.Join(s.StateDir, logFile))
	start := time.Now()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(s.StateDir, logFile))
			return fmt.Errorf("sandbox supervisor exited before the clusters were up (%w):\n%s", err, log)
		case <-ctx.Done():
			return fmt.Errorf("waiting for the sandbox: %w", ctx.Err())
		case <-tick.C:
			if _, err := os.Stat(filepath.Join(s.StateDir, readyFile)); err == nil {
				fmt.Fprintf(s.Out, "clusters up in %.1fs\n", time.Since(start).Seconds())
				s.printUsage()
				return nil
			}
		}
	}
}

// count is the number of clusters.
func (s *Sandbox) count() int {
	if s.Clusters < 2 || s.Clusters > MaxClusters {
		return 2
	}
	return s.Clusters
}

// names are the running clusters' names.
func (s *Sandbox) names() []string { return ClusterNames[:s.count()] }

func (s *Sandbox) printUsage() {
	fmt.Fprintf(s.Out, "\nThe sandbox's clusters:\n")
	for _, name := range s.names() {
		fmt.Fprintf(s.Out, "  %-9s kubectl --kubeconfig %s get nodes\n", name, s.KubeconfigPath(name))
	}
	fmt.Fprintf(s.Out, "\nTerraform with the local provider build:\n  export TF_CLI_CONFIG_FILE=%s\n", s.CLIConfigPath())
	s.printNetworkUsage()
	s.printIsolatedUsage()
	fmt.Fprintf(s.Out, "\nStop everything with: make sandbox-down\n")
}

// Serve is the supervisor: it starts the clusters, writes the state files, and stops
// everything when it receives SIGTERM or SIGINT.
func (s *Sandbox) Serve(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := os.MkdirAll(s.StateDir, 0o700); err != nil {
		return fmt.Errorf("creating sandbox state folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.StateDir, pidFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return fmt.Errorf("writing pid file: %w", err)
	}
	defer func() { _ = os.Remove(filepath.Join(s.StateDir, pidFile)) }()
	if err := s.ValidateExtraPodCIDRs(s.Nodes); err != nil {
		return err
	}
	if err := s.ValidateIsolate(s.Nodes); err != nil {
		return err
	}
	if err := s.ValidateKWOKConfigs(s.Nodes); err != nil {
		return err
	}

	opts := s.withKWOKConfigs(clusters(s.count()))
	if s.Nodes == NodesReal {
		opts = s.realNodeClusters()
	}
	env, err := testenv.Start(ctx, opts...)
	if err != nil {
		return err
	}
	var managers []*manager
	var nw *network
	defer func() {
		if err := nw.stop(); err != nil {
			fmt.Fprintln(s.Out, err)
		}
		fmt.Fprintln(s.Out, "stopping controller managers")
		if err := stopManagers(managers); err != nil {
			fmt.Fprintln(s.Out, err)
		}
		fmt.Fprintln(s.Out, "stopping clusters")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(s.Out, err)
		}
		s.removeStateFiles()
	}()
	// The namespace the examples offload.
	demo := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DemoNamespace}}
	if err := env.Cluster("consumer").Client.Create(ctx, demo); err != nil {
		return fmt.Errorf("creating namespace %s on the consumer: %w", DemoNamespace, err)
	}
	if err := os.WriteFile(filepath.Join(s.StateDir, envDirFile), []byte(env.Dir), 0o600); err != nil {
		return fmt.Errorf("writing env folder: %w", err)
	}
	if s.Nodes == NodesReal {
		for _, c := range env.Clusters {
			if err := s.installChart(ctx, c); err != nil {
				return err
			}
		}
		// The gateways run as pods on the real nodes.
		if err := os.WriteFile(filepath.Join(s.StateDir, networkingFile), []byte("enabled"), 0o600); err != nil {
			return fmt.Errorf("writing networking state: %w", err)
		}
	} else {
		// The network first: an isolated manager runs in it, and the API-server proxies'
		// Services are there when the managers start (nothing else in it needs the managers).
		if nw, err = s.startNetwork(ctx, env); err != nil {
			return err
		}
		if len(s.Isolate) > 0 && nw == nil {
			return fmt.Errorf("-%s %s needs the sandbox's networking, which is disabled (see above)", IsolateFlag, strings.Join(s.Isolate, ","))
		}
		if err := s.recordIsolated(); err != nil {
			return err
		}
		if managers, err = s.startManagers(ctx, env, opts); err != nil {
			return err
		}
	}
	nodes := NodesKWOK
	if s.Nodes == NodesReal {
		nodes = NodesReal
	}
	if err := os.WriteFile(filepath.Join(s.StateDir, nodesFile), []byte(nodes), 0o600); err != nil {
		return fmt.Errorf("writing nodes state: %w", err)
	}
	for _, c := range env.Clusters {
		data, err := os.ReadFile(c.KubeconfigPath)
		if err != nil {
			return fmt.Errorf("reading kubeconfig of %s: %w", c.Name, err)
		}
		if err := os.WriteFile(s.KubeconfigPath(c.Name), data, 0o600); err != nil {
			return fmt.Errorf("writing kubeconfig of %s: %w", c.Name, err)
		}
	}
	rc := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"peerkit/liqo\" = %q\n  }\n  direct {}\n}\n", s.ProviderBinDir)
	if err := os.WriteFile(s.CLIConfigPath(), []byte(rc), 0o600); err != nil {
		return fmt.Errorf("writing Terraform CLI configuration: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.StateDir, readyFile), nil, 0o600); err != nil {
		return fmt.Errorf("writing ready file: %w", err)
	}
	fmt.Fprintln(s.Out, "sandbox ready")
	<-ctx.Done()
	return nil
}

func (s *Sandbox) removeStateFiles() {
	for _, f := range []string{readyFile, envDirFile, cliConfig, networkingFile, nodesFile, isolatedFile} {
		_ = os.Remove(filepath.Join(s.StateDir, f))
	}
	for _, name := range ClusterNames {
		_ = os.Remove(s.KubeconfigPath(name)) // whichever ran
		_ = os.Remove(filepath.Join(s.StateDir, PprofFile(name)))
	}
}

// runningPID returns the supervisor's pid when it is alive.
func (s *Sandbox) runningPID() (int, bool) {
	data, err := os.ReadFile(filepath.Join(s.StateDir, pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

// Down stops the supervisor, waits until it and every cluster process are gone, and removes the
// state folder. It succeeds when nothing runs.
func (s *Sandbox) Down(ctx context.Context) error {
	envDir, _ := os.ReadFile(filepath.Join(s.StateDir, envDirFile))
	if pid, ok := s.runningPID(); ok {
		fmt.Fprintf(s.Out, "stopping sandbox (supervisor pid %d)\n", pid)
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signalling sandbox supervisor: %w", err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL) // its clusters die with it (parent-death signal)
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for the sandbox to stop: %w", ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	} else {
		fmt.Fprintln(s.Out, "sandbox not running")
	}
	if err := sweepNetwork(s.Out); err != nil {
		return err
	}
	// The real nodes of a supervisor that was killed (its pods, containerd's shims, flanneld,
	// the nodes' network namespaces with their VXLAN and bridge links, mounts): on every node.
	if err := testenv.ReapStaleRealNodes(ctx); err != nil {
		return fmt.Errorf("removing the real nodes a stopped sandbox left: %w", err)
	}
	if dir := strings.TrimSpace(string(envDir)); dir != "" {
		if left := testenv.ProcessesUsing(dir); len(left) > 0 {
			return fmt.Errorf("processes of the sandbox still running: %v", left)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing %s: %w", dir, err)
		}
	}
	if err := os.RemoveAll(s.StateDir); err != nil {
		return fmt.Errorf("removing %s: %w", s.StateDir, err)
	}
	return nil
}
