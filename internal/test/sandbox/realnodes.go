package sandbox

// The sandbox on real nodes: where the machine allows it (root on Linux, with the real-node
// binaries, the component images and helm built), each cluster gets real nodes (kubelet and
// containerd, internal/test/testenv; one by default, -real-nodes N, more than one joined by flannel)
// instead of KWOK nodes, and our chart installed by helm from the
// locally built images, as a user installs it: the controller manager, the virtual kubelet and
// the WireGuard gateways run as pods, offloaded workloads as real containers. Elsewhere the
// sandbox is the KWOK one, with the components as processes.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/images"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// What the sandbox's nodes are (liqo-sandbox -nodes).
const (
	// NodesKWOK: KWOK nodes, the components as processes beside the API servers.
	NodesKWOK = "kwok"
	// NodesReal: real nodes (Sandbox.RealNodes per cluster), the chart installed by helm; an
	// error where the machine cannot run them.
	NodesReal = "real"
	// NodesAuto: real nodes where the machine can run them, KWOK otherwise.
	NodesAuto = "auto"
	// nodesFile in the state folder says which the running sandbox has.
	nodesFile = "nodes"
	// chartRelease and chartNamespace are where the sandbox installs the chart.
	chartRelease, chartNamespace = "liqo", "liqo-system"
	// MaxRealNodes is the most real nodes per cluster the sandbox runs (each takes about
	// 230 MiB; see the README).
	MaxRealNodes = 4
	// RealNodesFlag is liqo-sandbox's flag for Sandbox.RealNodes.
	RealNodesFlag = "real-nodes"
)

// RealNodeImages are the archives of the component images for version, in dir (`make images`).
func RealNodeImages(dir string) []string {
	var out []string
	for _, c := range images.Components {
		out = append(out, filepath.Join(dir, c.Name+"-"+version.Version+".tar"))
	}
	return out
}

// ResolveNodes turns mode (kwok, real or auto) into kwok or real, with a line that says which
// and, for a fall-back to KWOK, why. For real nodes it checks what they need: root on Linux,
// the real-node binaries, s.Images, s.Helm and s.Chart.
func (s *Sandbox) ResolveNodes(mode string) (string, string, error) {
	switch mode {
	case NodesKWOK, "":
		return NodesKWOK, "nodes: KWOK (the components run as processes beside the API servers)", nil
	case NodesReal, NodesAuto:
	default:
		return "", "", fmt.Errorf("-nodes %q: want kwok, real or auto", mode)
	}
	why := s.realNodesMissing()
	switch {
	case why == "" && s.realNodeCount() > 1:
		return NodesReal, fmt.Sprintf("nodes: real, %d per cluster (each a kubelet with containerd, joined by flannel's VXLAN; our chart installed by helm)", s.realNodeCount()), nil
	case why == "":
		return NodesReal, "nodes: real (a kubelet with containerd in each cluster; our chart installed by helm)", nil
	case mode == NodesReal:
		return "", "", fmt.Errorf("real nodes unavailable: %s", why)
	default:
		return NodesKWOK, "nodes: KWOK, not real: " + why, nil
	}
}

// realNodesMissing says what real nodes lack here; empty when nothing.
func (s *Sandbox) realNodesMissing() string {
	if _, err := testenv.RealNodeBinDir(); err != nil {
		return err.Error()
	}
	if s.Clusters > 2 {
		return "the real-node sandbox runs two clusters"
	}
	if s.realNodeCount() > 1 {
		if _, err := testenv.FlannelBinDir(); err != nil {
			return fmt.Sprintf("-%s %d needs flannel: %v", RealNodesFlag, s.realNodeCount(), err)
		}
	}
	for _, f := range append(RealNodeImages(s.Images), s.Helm, filepath.Join(s.Chart, "Chart.yaml")) {
		if _, err := os.Stat(f); err != nil {
			return fmt.Sprintf("%s is missing (make demo builds it as root on Linux)", f)
		}
	}
	return ""
}

// ValidateRealNodes checks -real-nodes against the requested nodes' mode (-nodes): 1 to
// MaxRealNodes, and more than one not with kwok (auto that falls back to KWOK says why, see
// ResolveNodes, and runs KWOK nodes).
func (s *Sandbox) ValidateRealNodes(mode string) error {
	switch n := s.realNodeCount(); {
	case s.RealNodes < 0 || n > MaxRealNodes:
		return fmt.Errorf("-%s %d: want 1 to %d real nodes per cluster", RealNodesFlag, s.RealNodes, MaxRealNodes)
	case n > 1 && (mode == NodesKWOK || mode == ""):
		return fmt.Errorf("-%s %d needs real nodes (-nodes real or auto, as root on Linux): the KWOK sandbox has nodes of its own", RealNodesFlag, n)
	}
	return nil
}

// realNodeCount is how many real nodes each cluster has.
func (s *Sandbox) realNodeCount() int { return max(s.RealNodes, 1) }

// realNodeClusters are the sandbox's clusters with their real nodes (flannel joins them when
// there are several; each node's pods then take a /24 of the cluster's pod CIDR).
func (s *Sandbox) realNodeClusters() []testenv.ClusterOptions {
	var out []testenv.ClusterOptions
	for _, o := range clusters(s.count()) {
		out = append(out, testenv.ClusterOptions{Name: o.Name, PodCIDR: o.PodCIDR, RealNodes: s.realNodeCount(),
			RealNode: &testenv.RealNodeOptions{PodCIDR: o.PodCIDR, Images: RealNodeImages(s.Images)}})
	}
	return out
}

// installChart installs the chart into cluster c with helm, from the imported images (never
// pulled), and waits for the controller manager.
func (s *Sandbox) installChart(ctx context.Context, c *testenv.Cluster) error {
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return fmt.Errorf("cluster %s: API server URL %q: %w", c.Name, c.Config.Host, err)
	}
	opts, err := clusterOptions(c.Name)
	if err != nil {
		return err
	}
	values, err := json.Marshal(map[string]any{
		"clusterID": c.Name,
		// The cluster's, not the first node's (with flannel, each node has a /24 of it).
		"podCIDR":      opts.PodCIDR,
		"serviceCIDR":  testenv.ServiceCIDR,
		"externalCIDR": externalCIDR(c.Name),
		// As the node's pods and the peers reach the API server.
		"apiServerURL": "https://" + c.RealNode.HostIP + ":" + u.Port(),
		"pullPolicy":   "Never",
	})
	if err != nil {
		return fmt.Errorf("encoding chart values: %w", err)
	}
	valuesFile := filepath.Join(s.StateDir, c.Name+"-values.json")
	if err := os.WriteFile(valuesFile, values, 0o600); err != nil {
		return fmt.Errorf("writing chart values: %w", err)
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, s.Helm, "install", chartRelease, s.Chart, "--namespace", chartNamespace, "--create-namespace",
		"--kubeconfig", c.KubeconfigPath, "--values", valuesFile, "--wait", "--timeout", "5m")
	helmHome := filepath.Join(s.StateDir, "helm")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+helmHome+"/cache", "HELM_CONFIG_HOME="+helmHome+"/config", "HELM_DATA_HOME="+helmHome+"/data")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("helm install into %s: %w\n%s", c.Name, err, strings.TrimSpace(string(out)))
	}
	fmt.Fprintf(s.Out, "chart installed into %s by helm in %.1fs\n", c.Name, time.Since(start).Seconds())
	return nil
}
