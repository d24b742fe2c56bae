package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FlannelBinDirEnv names the environment variable of the folder with flanneld and the flannel
// CNI plugin (cni/flannel), which `make flannel` builds into bin/flannel.
const FlannelBinDirEnv = "LIQO_FLANNEL_BIN"

// The real nodes' pod networks (RealNodeOptions.CNI).
const (
	// CNIBridge is one node's bridge with host-local addresses from the whole pod CIDR: the
	// default with one real node.
	CNIBridge = "bridge"
	// CNIFlannel is flannel with its VXLAN backend: flanneld on every node, its subnet leases
	// in the cluster's API (--kube-subnet-mgr: each node's Node.spec.podCIDR, a /24 of the pod
	// CIDR that kube-controller-manager allocates), and flannel's CNI configuration delegating
	// to bridge and host-local. The default with more than one real node.
	CNIFlannel = "flannel"
)

// flannelNodeMask is the size of each node's pod CIDR with flannel.
const flannelNodeMask = 24

// flannelUser is flanneld's user; flannelRBAC grants it what flannel's own manifest grants its
// ServiceAccount.
const flannelUser = "flannel"

// flannelNetConf is flannel's net-conf.json: the VXLAN backend on the cluster's pod CIDR (%s).
const flannelNetConf = `{"Network": "%s", "Backend": {"Type": "vxlan"}}
`

// flannelCNIConfig is the node's pod network with flannel, as flannel's manifest configures it
// (flannel, then portmap), with the node's own files: %[1]s is the network's name, %[2]s the
// node's folder.
const flannelCNIConfig = `{
  "cniVersion": "0.4.0",
  "name": "%[1]s",
  "plugins": [
    {
      "type": "flannel",
      "subnetFile": "%[2]s/flannel/subnet.env",
      "dataDir": "%[2]s/cni/flannel",
      "ipam": {"dataDir": "%[2]s/cni/ipam"},
      "delegate": {"hairpinMode": true, "isDefaultGateway": true}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`

// flannelCNIPlugins are the system's CNI plugins a flannel node uses beside flannel's.
var flannelCNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// FlannelBinDir returns the folder of flanneld and cni/flannel ($LIQO_FLANNEL_BIN), or an
// error wrapping ErrRealNodeUnavailable that says what is missing.
func FlannelBinDir() (string, error) {
	dir := os.Getenv(FlannelBinDirEnv)
	if dir == "" {
		return "", fmt.Errorf("%w: %s is not set (`make flannel` builds flanneld into bin/flannel)", ErrRealNodeUnavailable, FlannelBinDirEnv)
	}
	for _, f := range []string{filepath.Join(dir, "flanneld"), filepath.Join(dir, "cni", "flannel")} {
		if _, err := os.Stat(f); err != nil {
			return "", fmt.Errorf("%w: %s missing (`make flannel`)", ErrRealNodeUnavailable, f)
		}
	}
	return dir, nil
}

// flannelFor returns flannel's folder when a cluster with count real nodes and the given CNI
// runs flannel, "" for the bridge, or an error for a CNI that cannot be.
func flannelFor(cni string, count int) (string, error) {
	switch {
	case cni == CNIFlannel || cni == "" && count > 1:
		return FlannelBinDir()
	case cni == CNIBridge && count > 1:
		return "", fmt.Errorf("real nodes: CNI %q with %d nodes: the bridge network joins no nodes; use %q or one node", cni, count, CNIFlannel)
	case cni == "" || cni == CNIBridge:
		return "", nil
	default:
		return "", fmt.Errorf("real nodes: unknown CNI %q: use %q or %q", cni, CNIBridge, CNIFlannel)
	}
}

// grantFlannel gives flanneld's user the rights flannel's own manifest gives it: read pods
// and nodes, patch nodes' status (its annotations and NetworkUnavailable).
func (c *Cluster) grantFlannel(ctx context.Context) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: flannelUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: flannelUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: flannelUser},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: flannelUser}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := c.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cluster %s: granting flannel its rights: %w", c.Name, err)
		}
	}
	return nil
}

// writeCNIConfig writes the node's CNI configuration into containerd's configuration folder and
// returns the folder of the CNI plugins: the system's for the bridge; with flannel, a folder of
// the node's own with flannel's plugin beside links to the system's.
func (n *RealNode) writeCNIConfig() (string, error) {
	cni := filepath.Join(n.Dir, "cni", "net.d", "10-"+n.net.hostLink+".conflist")
	if n.flannelBin == "" {
		if err := os.WriteFile(cni, fmt.Appendf(nil, cniConfig, n.cniNetwork(), n.PodCIDR, n.Dir), 0o600); err != nil {
			return "", fmt.Errorf("real node %s: writing the CNI config: %w", n.Name, err)
		}
		return cniBinDir, nil
	}
	binDir := filepath.Join(n.Dir, "cni", "bin")
	if err := os.MkdirAll(binDir, 0o700); err != nil {
		return "", fmt.Errorf("real node %s: %w", n.Name, err)
	}
	links := map[string]string{"flannel": filepath.Join(n.flannelBin, "cni", "flannel")}
	for _, p := range flannelCNIPlugins {
		links[p] = filepath.Join(cniBinDir, p)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(binDir, name)); err != nil {
			return "", fmt.Errorf("real node %s: CNI plugin %s: %w", n.Name, name, err)
		}
	}
	if err := os.WriteFile(cni, fmt.Appendf(nil, flannelCNIConfig, n.cniNetwork(), n.Dir), 0o600); err != nil {
		return "", fmt.Errorf("real node %s: writing the CNI config: %w", n.Name, err)
	}
	return binDir, nil
}

// startFlannel waits until the controller manager has given the node its pod CIDR, runs
// flanneld (VXLAN over eth0, masquerading what leaves the pod network, as flannel's manifest
// runs it) in the node's network namespace, waits for its subnet file (the CNI plugin's input),
// and routes the node's pod CIDR from the host.
func (n *RealNode) startFlannel(ctx context.Context, c client.Client) error {
	var podCIDR string
	err := n.waitFor(ctx, "the node's pod CIDR (kube-controller-manager --allocate-node-cidrs)", 2*time.Minute, func(ctx context.Context) (bool, error) {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		podCIDR = node.Spec.PodCIDR
		return podCIDR != "", nil
	})
	if err != nil {
		return err
	}
	dir := filepath.Join(n.Dir, "flannel")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("real node %s: %w", n.Name, err)
	}
	netConf := filepath.Join(dir, "net-conf.json")
	if err := os.WriteFile(netConf, fmt.Appendf(nil, flannelNetConf, n.clusterCIDR), 0o600); err != nil {
		return fmt.Errorf("real node %s: writing flannel's net-conf.json: %w", n.Name, err)
	}
	subnetFile := filepath.Join(dir, "subnet.env")
	if err := n.startInNetns("flanneld", "env", "NODE_NAME="+n.Name, filepath.Join(n.flannelBin, "flanneld"),
		"--kube-subnet-mgr", "--kubeconfig-file="+filepath.Join(n.Dir, "flannel.kubeconfig"),
		"--net-config-path="+netConf, "--subnet-file="+subnetFile, "--iface=eth0", "--ip-masq"); err != nil {
		return err
	}
	err = n.waitFor(ctx, "flanneld's subnet file", time.Minute, func(context.Context) (bool, error) {
		_, err := os.Stat(subnetFile)
		return err == nil, nil
	})
	if err != nil {
		return err
	}
	n.PodCIDR = podCIDR
	if err := n.net.routePods(ctx, podCIDR); err != nil {
		return fmt.Errorf("real node %s: %w", n.Name, err)
	}
	n.RoutedFromHost = n.net.routed
	return nil
}
