package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RealNodeBinDirEnv names the environment variable of the folder with the real node's kubelet
// and kube-proxy (`make realnode` builds them into bin/realnode).
const RealNodeBinDirEnv = "LIQO_REALNODE_BIN"

// The local images every real node has (built from internal/test/testenv/realnode and imported
// into its containerd; no registry is involved).
const (
	// PauseImage is the pods' sandbox image: a static program that sleeps until SIGTERM.
	PauseImage = "peerkit.local/pause:3.10"
	// TestHTTPImage is the test image (internal/test/testenv/realnode/testhttp): it serves
	// GET / (the hostname) and /healthz on :8080 and logs each request; its `get URL` and
	// `apiserver` modes are HTTP clients (see the command's doc).
	TestHTTPImage = "peerkit.local/test-http:v1"
	// TestHTTPPort is the port the test image serves on.
	TestHTTPPort = 8080
)

// ErrRealNodeUnavailable is returned when a real node cannot run here: not root on Linux,
// LIQO_REALNODE_BIN unset or incomplete, or a system package missing.
var ErrRealNodeUnavailable = errors.New("real nodes unavailable")

// RealNodeOptions describe a cluster's real nodes (the same for each; ClusterOptions.RealNodes
// says how many, one by default). Each is kubelet, kube-proxy and containerd in a
// network namespace of their own (lqrn<k>-<cluster>), linked to the host by a veth pair on a
// /30 of 10.253.0.0/16. Setting them makes the cluster's API server listen on, and advertise,
// the host side of that link (pods reach it through the `kubernetes` Service), authorize with
// Node,RBAC, admit ServiceAccounts (pods get projected tokens), route to endpoints
// (--enable-aggregator-routing) and reach kubelets (KubeletAPI); Scheduler and
// ControllerManager are implied.
type RealNodeOptions struct {
	// Name of the (first) Node; the others take a suffix 2, 3... Default: <cluster>-node.
	Name string
	// PodCIDR is where the node's pods take their addresses (bridge and host-local CNI) and
	// kube-proxy's cluster CIDR. Default: the cluster's PodCIDR, 10.244.0.0/16. Two clusters
	// may use the same one: each node's pods live in its own namespace.
	PodCIDR string
	// Labels are added to the node's (kubelet --node-labels).
	Labels map[string]string
	// Images are more image archives (images.WriteArchive) to import into the node's
	// containerd at start; ImportImages imports more later.
	Images []string
	// CNI is the pods' network: CNIBridge (the default with one node) or CNIFlannel (the
	// default with more, ClusterOptions.RealNodes; it needs `make flannel`, see
	// FlannelBinDir). With flannel each node's pods take a /24 of PodCIDR.
	CNI string
}

// RealNode is a cluster's running real node.
type RealNode struct {
	// Name is the Node's name.
	Name string
	// IP is the node's InternalIP: eth0 in its network namespace; the host reaches it.
	IP string
	// HostIP is the host side of the node's link: the API server listens there and pods reach
	// it through the `kubernetes` Service.
	HostIP string
	// PodCIDR is where the node's pods take their addresses.
	PodCIDR string
	// Netns is the node's network namespace, /run/netns/<Netns>.
	Netns string
	// RoutedFromHost says whether the host routes PodCIDR to the node, so that the API server
	// reaches the node's pods (webhooks). It is false when another real node with the same pod
	// CIDR has the route.
	RoutedFromHost bool
	// Dir is the node's folder: containerd's and kubelet's state, configs, credentials.
	Dir string
	// ReadyIn is how long the node took from containerd's start to Ready.
	ReadyIn time.Duration

	binDir      string
	clusterCIDR string
	logDir      string
	net         *nodeNetwork
	procs       []*process
	podNetns    []string // the pods' network namespaces containerd made, found at stop
	containers  []string // the containers' IDs, found at stop
	flannelBin  string   // flanneld's folder, or "" for the bridge
	started     bool     // counted by nodeStarting
	stopped     bool
}

// RealNodeBinDir returns the folder of kubelet and kube-proxy ($LIQO_REALNODE_BIN) after
// checking that a real node can run here; otherwise an error wrapping ErrRealNodeUnavailable
// that says what is missing.
func RealNodeBinDir() (string, error) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return "", fmt.Errorf("%w: needs root on Linux", ErrRealNodeUnavailable)
	}
	dir := os.Getenv(RealNodeBinDirEnv)
	if dir == "" {
		return "", fmt.Errorf("%w: %s is not set (`make realnode` builds kubelet and kube-proxy into bin/realnode)", ErrRealNodeUnavailable, RealNodeBinDirEnv)
	}
	for _, f := range []string{filepath.Join(dir, "kubelet"), filepath.Join(dir, "kube-proxy"), filepath.Join(cniBinDir, "bridge"), filepath.Join(cniBinDir, "host-local")} {
		if _, err := os.Stat(f); err != nil {
			return "", fmt.Errorf("%w: %s missing (`make realnode`, `make deps`)", ErrRealNodeUnavailable, f)
		}
	}
	for _, cmd := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "ip", "iptables", "nsenter", "go"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return "", fmt.Errorf("%w: %s not on PATH (`make deps`)", ErrRealNodeUnavailable, cmd)
		}
	}
	return dir, nil
}

// startRealNodes brings up the cluster's real nodes on the networks made before the control
// plane, in parallel, and waits until each is Ready (with flannel, and its pod network up).
// c.RealNodes are set first, so that stop removes whatever was started.
func (c *Cluster) startRealNodes(ctx context.Context, binDir string, authn *diskCertAuthn, opts RealNodeOptions, clusterCIDR string, archives []string) error {
	if c.flannelBin != "" {
		if err := c.grantFlannel(ctx); err != nil {
			return err
		}
	}
	c.nodeStart = &realNodeStart{binDir: binDir, authn: authn, opts: opts, clusterCIDR: clusterCIDR, archives: archives}
	for _, nn := range c.nodeNets {
		if _, err := c.newRealNode(nn); err != nil {
			return err
		}
	}
	c.RealNode = c.RealNodes[0]
	errs := make([]error, len(c.RealNodes))
	var wg sync.WaitGroup
	for i, n := range c.RealNodes {
		wg.Go(func() {
			errs[i] = c.startRealNode(ctx, n)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// start runs the node's containerd (with the local images), kubelet, kube-proxy and, with
// flannel, flanneld, and waits until the node is Ready.
func (n *RealNode) start(ctx context.Context, c client.Client, authn *diskCertAuthn, admin *rest.Config, certDir string, opts RealNodeOptions, archives []string) error {
	nodeStarting()
	n.started = true
	start := time.Now()
	for _, d := range []string{n.Dir, n.logDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("real node %s: %w", n.Name, err)
		}
	}
	if err := n.makeCgroups(); err != nil {
		return err
	}
	if err := n.startContainerd(ctx); err != nil {
		return err
	}
	if err := n.ImportImages(ctx, append(archives, opts.Images...)...); err != nil {
		return err
	}
	if err := n.writeNodeCredentials(authn, admin); err != nil {
		return err
	}
	if err := n.startKubelet(certDir, opts.Labels); err != nil {
		return err
	}
	if err := n.startKubeProxy(ctx); err != nil {
		return err
	}
	if n.flannelBin != "" {
		if err := n.startFlannel(ctx, c); err != nil {
			return err
		}
	}
	err := n.waitFor(ctx, "the node to be Ready", 2*time.Minute, func(ctx context.Context) (bool, error) {
		node := &corev1.Node{}
		err := c.Get(ctx, client.ObjectKey{Name: n.Name}, node)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("getting node %s: %w", n.Name, err)
		}
		return nodeReady(node), nil
	})
	n.ReadyIn = time.Since(start)
	return err
}

// RSS returns the resident memory of the node's processes (containerd, kubelet, kube-proxy),
// in bytes, by name.
func (n *RealNode) RSS() (map[string]int64, error) {
	rss := map[string]int64{}
	for _, p := range n.procs {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
		if err != nil {
			return nil, fmt.Errorf("real node %s: reading the status of %s: %w", n.Name, p.name, err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kib, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("real node %s: RSS of %s: %w", n.Name, p.name, err)
				}
				rss[p.name] = kib * 1024
			}
		}
	}
	return rss, nil
}

// startInNetns runs bin in the node's network namespace (and the host's mount namespace),
// logging to <cluster>/logs/<name>.log.
func (n *RealNode) startInNetns(name, bin string, args ...string) error {
	p, err := startProcess(name, n.logDir, "nsenter", append([]string{"--net=" + n.net.path(), "--", bin}, args...)...)
	if err != nil {
		return fmt.Errorf("real node %s: %w", n.Name, err)
	}
	n.procs = append(n.procs, p)
	return nil
}

// checkProcesses fails if one of the node's processes has exited.
func (n *RealNode) checkProcesses() error {
	for _, p := range n.procs {
		if done, err := p.exited(); done {
			return &exitedError{what: "real node " + n.Name, name: p.name, err: err, log: filepath.Join(n.logDir, p.name+".log"), tail: p.logTail()}
		}
	}
	return nil
}

// waitFor polls cond until timeout, failing early when one of the node's processes exits.
func (n *RealNode) waitFor(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := n.checkProcesses(); err != nil {
			return false, err
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("real node %s: waiting for %s (logs in %s): %w", n.Name, what, n.logDir, err)
	}
	return nil
}

// Command returns name with args to run in the node's network namespace (and the host's mount
// namespace), e.g. iptables to look at kube-proxy's rules.
func (n *RealNode) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return n.net.command(ctx, name, args...)
}

// stop ends kube-proxy, kubelet and containerd, then removes what they leave: the pods'
// processes, mounts, network namespaces and cgroups (see sweep). The node stays readable
// (Leftovers) after.
func (n *RealNode) stop(ctx context.Context) error {
	if n.stopped || !n.started {
		return nil
	}
	n.stopped = true
	var errs []error
	// kubelet and kube-proxy first, so that nothing restarts the containers.
	for i := len(n.procs) - 1; i >= 1; i-- {
		errs = append(errs, n.procs[i].stop(10*time.Second))
	}
	// What containerd knows of its pods' network namespaces, while it still answers; then
	// the containers go.
	n.podNetns = append(n.podNetns, n.sandboxNetns(ctx)...)
	n.containers = append(n.containers, n.deleteTasks(ctx)...)
	if len(n.procs) > 0 { // containerd
		errs = append(errs, n.procs[0].stop(10*time.Second))
	}
	n.procs = nil
	errs = append(errs, n.sweep(ctx), n.removeContainerFiles(n.containers))
	nodeStopped()
	return errors.Join(errs...)
}
