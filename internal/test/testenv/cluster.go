package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	"github.com/peerkit/terraform-provider-liqo/internal/api/crds"
)

// ServiceCIDR is the clusters' Service range: the API server's default, which the test bed
// keeps (the real nodes' API server certificate covers its first address).
const ServiceCIDR = "10.0.0.0/24"

// ClusterOptions says what one cluster runs.
type ClusterOptions struct {
	// Name identifies the cluster in the Env and names its folder. Required, unique.
	Name string
	// Scheduler runs kube-scheduler.
	Scheduler bool
	// ControllerManager runs kube-controller-manager, with the CSR signer enabled for the
	// kubernetes.io/kube-apiserver-client signer (it signs with the API server's client CA).
	ControllerManager bool
	// Nodes are KWOK nodes: fake nodes that turn the pods bound to them Running. Pods need a
	// scheduler to be bound and, for Deployments, a controller manager.
	Nodes []NodeOptions
	// PodCIDR is where KWOK takes its pods' IPs from. Default: 10.244.0.0/16.
	PodCIDR string
	// SkipLiqoCRDs leaves our CRDs out (to install other ones through CRDPaths).
	SkipLiqoCRDs bool
	// CRDPaths are more CRD files or folders to install, e.g. upstream Liqo's.
	CRDPaths []string
	// KubeletAPI lets the API server reach nodes' kubelet endpoints (kubectl logs, exec, attach)
	// as a real cluster's does: it connects to a node's InternalIP and daemonEndpoints port,
	// authenticates as KubeletClientUser with a client certificate of the client CA, and
	// verifies the kubelet's serving certificate against the client CA (which
	// kube-controller-manager signs kubernetes.io/kubelet-serving CSRs with). KWOK nodes then
	// serve their endpoint over HTTPS with such a certificate.
	KubeletAPI bool
	// KWOKConfigs are more kwok configuration files, e.g. ClusterLogs and ClusterExec objects
	// that simulate logs and exec for KWOK's pods (with KubeletAPI).
	KWOKConfigs []string
	// ControllerManagerArgs and SchedulerArgs are appended to kube-controller-manager's and
	// kube-scheduler's command lines, e.g. --kube-api-qps for benchmarks.
	ControllerManagerArgs, SchedulerArgs []string
	// RealNode, when set, starts one real node for the cluster (kubelet, kube-proxy and
	// containerd; root on Linux only, see RealNodeBinDir). It implies Scheduler,
	// ControllerManager and KubeletAPI; KWOK Nodes may run beside it.
	RealNode *RealNodeOptions
	// RealNodes is how many real nodes to start (RealNode's options, or the defaults when
	// RealNode is nil): each in its own network namespace with its own address, containerd,
	// kubelet and kube-proxy. More than one implies flannel as the pods' network
	// (RealNodeOptions.CNI), whose leases take kube-controller-manager's node CIDR
	// allocation. 0 means one when RealNode is set.
	RealNodes int
}

// Cluster is one running control plane.
type Cluster struct {
	// Name is the cluster's name in the Env.
	Name string
	// Dir is the cluster's folder: certificates, etcd data, kubeconfig, logs.
	Dir string
	// Config authenticates as a cluster admin (group system:masters).
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file for Config, with context Name.
	KubeconfigPath string
	// Client is a controller-runtime client for Config, knowing our API types.
	Client client.Client
	// RealNode is the cluster's (first) real node (ClusterOptions.RealNode), or nil.
	RealNode *RealNode
	// RealNodes are the cluster's real nodes, RealNode first.
	RealNodes []*RealNode

	env        *envtest.Environment
	started    bool // env's control plane is up
	procs      []*process
	nodeNets   []*nodeNetwork // the real nodes' networks, made before the control plane
	flannelBin string         // flanneld's folder when the real nodes run flannel
	nodeStart  *realNodeStart // what starting a real node takes, once the first ones start
	nodesMade  int            // real nodes made so far: the next one's index (names, folders)
}

// startCluster brings up one cluster in dir. On error, it stops what it started.
func startCluster(ctx context.Context, binDir, dir string, opts ClusterOptions, testImages []string) (c *Cluster, err error) {
	c = &Cluster{Name: opts.Name, Dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("starting cluster %s: %w", opts.Name, err), c.stop())
			c = nil
		}
	}()
	certDir, etcdDir, wrapDir := filepath.Join(dir, "certs"), filepath.Join(dir, "etcd"), filepath.Join(dir, "bin")
	for _, d := range []string{certDir, etcdDir, wrapDir, filepath.Join(dir, "logs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return c, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	apiserverBin, err := wrapWithDeathSignal(wrapDir, filepath.Join(binDir, "kube-apiserver"))
	if err != nil {
		return c, err
	}
	etcdBin, err := wrapWithDeathSignal(wrapDir, filepath.Join(binDir, "etcd"))
	if err != nil {
		return c, err
	}
	authn, err := newDiskCertAuthn(certDir)
	if err != nil {
		return c, err
	}
	apiLog, err := os.Create(filepath.Join(dir, "logs", "kube-apiserver.log"))
	if err != nil {
		return c, fmt.Errorf("creating apiserver log: %w", err)
	}
	defer func() { _ = apiLog.Close() }() // the apiserver keeps its own descriptor
	etcdLog, err := os.Create(filepath.Join(dir, "logs", "etcd.log"))
	if err != nil {
		return c, fmt.Errorf("creating etcd log: %w", err)
	}
	defer func() { _ = etcdLog.Close() }()

	var crdObjs []*apiextensionsv1.CustomResourceDefinition
	if !opts.SkipLiqoCRDs {
		if crdObjs, err = crds.All(); err != nil {
			return c, err
		}
	}
	scheme, err := api.NewScheme()
	if err != nil {
		return c, err
	}
	c.env = &envtest.Environment{
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{Path: apiserverBin, CertDir: certDir, SecureServing: envtest.SecureServing{Authn: authn}, Out: apiLog, Err: apiLog,
				StartTimeout: time.Minute, StopTimeout: 20 * time.Second},
			Etcd: &envtest.Etcd{Path: etcdBin, DataDir: etcdDir, Out: etcdLog, Err: etcdLog,
				StartTimeout: time.Minute, StopTimeout: 20 * time.Second},
			KubectlPath: filepath.Join(binDir, "kubectl"),
		},
		// envtest waits 10 s for the CRDs by default: too little on a loaded 2-core machine.
		CRDInstallOptions: envtest.CRDInstallOptions{CRDs: crdObjs, Paths: opts.CRDPaths, ErrorIfPathMissing: true, Scheme: scheme,
			MaxTime: 2 * time.Minute},
		Scheme: scheme,
	}
	realBin, opts, err := c.prepareRealNode(ctx, opts)
	if err != nil {
		return c, err
	}
	kwokArgs, err := c.configureKubeletAPI(authn, opts)
	if err != nil {
		return c, err
	}
	if _, err := c.env.Start(); err != nil {
		// envtest leaves etcd and the API server running when a later step (the CRDs) fails.
		if stopErr := c.env.ControlPlane.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping what started: %w", stopErr))
		}
		return c, fmt.Errorf("starting etcd and kube-apiserver (logs in %s): %w", filepath.Join(dir, "logs"), err)
	}
	c.started = true
	if err := c.addAdmin(scheme, certDir); err != nil {
		return c, err
	}

	if err := c.startComponents(ctx, binDir, certDir, realBin, authn, opts, kwokArgs, testImages); err != nil {
		return c, err
	}
	return c, c.checkProcesses()
}

// startComponents starts, once its API server runs, what else opts asks of the cluster: the
// controller manager, the scheduler, KWOK's nodes and the real nodes.
func (c *Cluster) startComponents(ctx context.Context, binDir, certDir, realBin string, authn *diskCertAuthn, opts ClusterOptions,
	kwokArgs, testImages []string) error {
	if opts.ControllerManager {
		if err := c.startControllerManager(ctx, binDir, certDir, opts.ControllerManagerArgs); err != nil {
			return err
		}
	}
	if opts.Scheduler {
		args := append([]string{"--kubeconfig=" + c.KubeconfigPath, "--secure-port=0", "--leader-elect=false"}, opts.SchedulerArgs...)
		p, err := startProcess("kube-scheduler", filepath.Join(c.Dir, "logs"), filepath.Join(binDir, "kube-scheduler"), args...)
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
	}
	if len(opts.Nodes) > 0 {
		if err := c.startKWOK(ctx, binDir, orDefault(opts.PodCIDR, "10.244.0.0/16"), opts.Nodes, kwokArgs...); err != nil {
			return err
		}
	}
	if opts.RealNode != nil {
		clusterCIDR := orDefault(opts.PodCIDR, "10.244.0.0/16")
		if c.flannelBin != "" { // flannel's network: the nodes' pod CIDRs are in it
			clusterCIDR = orDefault(opts.RealNode.PodCIDR, clusterCIDR)
		}
		if err := c.startRealNodes(ctx, realBin, authn, *opts.RealNode, clusterCIDR, testImages); err != nil {
			return err
		}
	}
	return nil
}

// configureKubeletAPI sets the API server up to reach kubelets when opts.KubeletAPI is set,
// and returns kwok's extra flags: its serving certificate then, and opts.KWOKConfigs.
func (c *Cluster) configureKubeletAPI(authn *diskCertAuthn, opts ClusterOptions) ([]string, error) {
	var kwokArgs []string
	if opts.KubeletAPI {
		if err := configureKubeletAPI(authn, c.env.ControlPlane.APIServer.Configure()); err != nil {
			return nil, err
		}
		var err error
		if kwokArgs, err = kwokServingArgs(authn); err != nil {
			return nil, err
		}
	}
	for _, f := range opts.KWOKConfigs {
		kwokArgs = append(kwokArgs, "--config="+f)
	}
	return kwokArgs, nil
}

// addAdmin makes the cluster's admin user (group system:masters): Config, Client and
// KubeconfigPath; and writes the API server's serving CA into certDir.
func (c *Cluster) addAdmin(scheme *runtime.Scheme, certDir string) error {
	admin, err := c.env.AddUser(envtest.User{Name: "testenv-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding admin user: %w", err)
	}
	c.Config = admin.Config()
	if c.Client, err = client.New(c.Config, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	if c.KubeconfigPath, err = writeKubeconfig(filepath.Join(c.Dir, "kubeconfig"), c.Name, c.Config); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(certDir, "serving-ca.crt"), c.Config.CAData, 0o600); err != nil {
		return fmt.Errorf("writing serving CA: %w", err)
	}
	return nil
}

func (c *Cluster) startControllerManager(ctx context.Context, binDir, certDir string, extra []string) error {
	flexDir := filepath.Join(c.Dir, "flexvolume")
	if err := os.MkdirAll(flexDir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", flexDir, err)
	}
	args := []string{
		"--kubeconfig=" + c.KubeconfigPath,
		"--secure-port=0",
		"--leader-elect=false",
		"--cluster-name=" + c.Name,
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + filepath.Join(certDir, "sa-signer.key"),
		"--root-ca-file=" + filepath.Join(certDir, "serving-ca.crt"),
		"--cluster-signing-cert-file=" + filepath.Join(certDir, clientCACertFile),
		"--cluster-signing-key-file=" + filepath.Join(certDir, clientCAKeyFile),
		"--flex-volume-plugin-dir=" + flexDir,
		// Two minutes, not 50 s, before a node whose lease lapsed turns NotReady: on a loaded
		// 2-core CI machine KWOK's lease renewals fell behind once and a KWOK node, standing
		// for a healthy kubelet, flapped NotReady under a test (CI, stop 46). The tests that
		// want a node NotReady set its condition themselves; none waits for this controller.
		"--node-monitor-grace-period=2m",
	}
	p, err := startProcess("kube-controller-manager", filepath.Join(c.Dir, "logs"), filepath.Join(binDir, "kube-controller-manager"), append(args, extra...)...)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	// The controller manager is working once its service-account controller has made the
	// default namespace's ServiceAccount.
	return c.waitFor(ctx, "kube-controller-manager to create the default ServiceAccount", func(ctx context.Context) (bool, error) {
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &corev1.ServiceAccount{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("getting default ServiceAccount: %w", err)
		}
		return true, nil
	})
}

// waitFor polls cond for up to a minute, failing early when one of the cluster's processes exits.
func (c *Cluster) waitFor(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.checkProcesses(); err != nil {
			return false, err
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("cluster %s: waiting for %s (logs in %s): %w", c.Name, what, filepath.Join(c.Dir, "logs"), err)
	}
	return nil
}

// checkProcesses fails if a process of the cluster has exited.
func (c *Cluster) checkProcesses() error {
	for _, p := range c.procs {
		if done, err := p.exited(); done {
			return &exitedError{what: "cluster " + c.Name, name: p.name, err: err, log: filepath.Join(c.Dir, "logs", p.name+".log"), tail: p.logTail()}
		}
	}
	for _, n := range c.RealNodes {
		if err := n.checkProcesses(); err != nil {
			return err
		}
	}
	return nil
}

// stop ends the cluster's real nodes (in parallel) and what they leave, its processes, newest
// first, etcd and the API server, and removes the real nodes' networks.
func (c *Cluster) stop() error {
	errs := make([]error, len(c.RealNodes))
	var wg sync.WaitGroup
	for i, n := range c.RealNodes {
		wg.Go(func() { errs[i] = n.stop(context.Background()) })
	}
	wg.Wait()
	for i := len(c.procs) - 1; i >= 0; i-- {
		errs = append(errs, c.procs[i].stop(10*time.Second))
	}
	c.procs = nil
	if c.started {
		c.started = false
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping control plane of %s: %w", c.Name, err))
		}
	}
	for _, nn := range c.nodeNets {
		err := nn.remove(context.Background())
		if err == nil {
			removeRecord(nn)
		}
		errs = append(errs, err)
	}
	c.nodeNets = nil
	return errors.Join(errs...)
}

// UserKubeconfig returns a kubeconfig authenticating as a new user with a client certificate
// from the cluster's client CA, for tests of what that user may do.
func (c *Cluster) UserKubeconfig(name string, groups ...string) ([]byte, error) {
	user, err := c.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: adding user %s: %w", c.Name, name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster %s: kubeconfig of user %s: %w", c.Name, name, err)
	}
	return data, nil
}
