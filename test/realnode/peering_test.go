package realnode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// terraformRun runs terraform on an example with a dev_overrides CLI configuration for a
// provider built from this tree.
type terraformRun struct {
	root, state string
	env         []string
}

// TestMain removes the binaries the package's tests built (testenv.BuildOnce) once they ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := testenv.RemoveBuilds(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// buildBinaries builds the provider and cmds (e.g. ./cmd/liqo-sandbox) into a folder shared by
// the package's tests (testenv.BuildOnce); it skips t without terraform on PATH. It returns the repository's root and the folder.
func buildBinaries(t testing.TB, cmds ...string) (root, bins string) {
	t.Helper()
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Skip("terraform is not on PATH (make deps installs it)")
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root, testenv.BuildOnce(t, append([]string{"."}, cmds...)...)
}

// newTerraformRun builds the provider and writes the CLI configuration; it skips without
// terraform on PATH.
func newTerraformRun(t testing.TB) *terraformRun {
	t.Helper()
	root, bins := buildBinaries(t)
	rc := filepath.Join(t.TempDir(), "terraformrc")
	cfg := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"peerkit/liqo\" = %q\n  }\n  direct {}\n}\n", bins)
	if err := os.WriteFile(rc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return &terraformRun{root: root, state: t.TempDir(), env: append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1")}
}

// mustRun runs terraform command (apply, destroy, plan) on an example with vars (name=value,
// or a flag such as -target=...), failing the test on a non-zero exit; it returns the output
// and the duration.
func (r *terraformRun) mustRun(t testing.TB, example, command string, vars ...string) (string, time.Duration) {
	t.Helper()
	args := []string{"-chdir=" + filepath.Join(r.root, "examples", example), command, "-input=false", "-no-color",
		"-state=" + filepath.Join(r.state, example+".tfstate")}
	if command != "plan" {
		args = append(args, "-auto-approve")
	}
	for _, v := range vars {
		if strings.HasPrefix(v, "-") { // a flag, e.g. -target=...
			args = append(args, v)
		} else {
			args = append(args, "-var", v)
		}
	}
	cmd := exec.Command("terraform", args...)
	cmd.Env = r.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("terraform %s %s: %v\n%s", command, example, err, out.String())
	}
	return out.String(), time.Since(start)
}

// installChart installs the chart into c with values (installValues' and more) and waits for
// the manager.
func installChart(ctx context.Context, t testing.TB, h *chart.Helper, c *testenv.Cluster, values map[string]any) {
	t.Helper()
	if out, err := h.Run(ctx, helmArgs(c, "install", chart.Release, chart.Dir(t), "--create-namespace",
		"--values", h.ValuesFile(values), "--wait", "--timeout", "3m")...); err != nil {
		t.Fatalf("helm install into %s: %v\n%s\n%s", c.Name, err, out, describePods(ctx, c, releaseNamespace))
	}
	waitClusterID(ctx, t, c, values["clusterID"].(string))
}

// peeringCase is one pair of real-node clusters to peer.
type peeringCase struct {
	name string
	// consumerNode and providerNode are the nodes' pod CIDRs.
	consumerNode, providerNode string
	// clusterPodCIDR is both clusters' pod CIDR as the chart declares it; empty: each node's.
	clusterPodCIDR string
	// virtualKubelet is the consumer's virtual-kubelet mode (chart value virtualKubelet.mode).
	virtualKubelet string
}

// realNodePair starts tc's consumer and provider clusters, each with a real node, and installs
// the chart into both; it returns them, the helm helper, and what each node's network has
// before any peering (nodeNetwork).
func realNodePair(t testing.TB, tc peeringCase) (h *chart.Helper, consumer, provider *testenv.Cluster, before map[*testenv.Cluster][]string) {
	t.Helper()
	h = chart.New(t)
	archives := componentArchives(t)
	clusterCIDR := func(node string) string { // kube-proxy's: pods' own traffic to Services is not masqueraded
		if tc.clusterPodCIDR != "" {
			return tc.clusterPodCIDR
		}
		return node
	}
	env := testenv.New(t,
		testenv.ClusterOptions{Name: "consumer", PodCIDR: clusterCIDR(tc.consumerNode),
			RealNode: &testenv.RealNodeOptions{PodCIDR: tc.consumerNode, Images: archives}},
		testenv.ClusterOptions{Name: "provider", PodCIDR: clusterCIDR(tc.providerNode),
			RealNode: &testenv.RealNodeOptions{PodCIDR: tc.providerNode, Images: archives}})
	consumer, provider = env.Cluster("consumer"), env.Cluster("provider")
	dumpOnFailure(t, consumer, provider)
	for _, c := range []*testenv.Cluster{consumer, provider} {
		values := installValues(c, c.Name)
		if tc.clusterPodCIDR != "" {
			values["podCIDR"] = tc.clusterPodCIDR
		}
		if c == consumer && tc.virtualKubelet != "" {
			values["virtualKubelet"] = map[string]any{"mode": tc.virtualKubelet}
		}
		installChart(t.Context(), t, h, c, values)
	}
	before = map[*testenv.Cluster][]string{consumer: nodeNetwork(t, consumer.RealNode), provider: nodeNetwork(t, provider.RealNode)}
	return h, consumer, provider, before
}

// uninstallLeavingNothing runs `helm uninstall` in each cluster of before and checks that
// nothing of ours is left, in the cluster or in its node's network.
func uninstallLeavingNothing(t testing.TB, h *chart.Helper, before map[*testenv.Cluster][]string) {
	t.Helper()
	ctx := t.Context()
	for c, was := range before {
		if out, err := h.Run(ctx, helmArgs(c, "uninstall", chart.Release, "--wait", "--timeout", "3m")...); err != nil {
			t.Fatalf("helm uninstall from %s: %v\n%s\n%s", c.Name, err, out, describePods(ctx, c, releaseNamespace))
		}
		if left := leftovers(ctx, t, c); len(left) > 0 {
			t.Errorf("%s: left after destroy and helm uninstall: %v", c.Name, left)
		}
		if left := slices.DeleteFunc(nodeNetwork(t, c.RealNode), func(s string) bool { return slices.Contains(was, s) }); len(left) > 0 {
			t.Errorf("%s's node: left after destroy and helm uninstall: %v", c.Name, left)
		}
	}
}

// runningContainers lists the pods on node with every container running (real containers: a
// containerd ID), outside the system, release and liqo-* namespaces (the tenants' gateways):
// the offloaded pods.
func runningContainers(ctx context.Context, c *testenv.Cluster, node string) []corev1.Pod {
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return nil
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.Namespace == releaseNamespace || strings.HasPrefix(p.Namespace, "kube-") || strings.HasPrefix(p.Namespace, "liqo-") ||
			p.DeletionTimestamp != nil || len(p.Status.ContainerStatuses) == 0 {
			continue
		}
		running := true
		for _, cs := range p.Status.ContainerStatuses {
			running = running && cs.State.Running != nil && strings.HasPrefix(cs.ContainerID, "containerd://")
		}
		if running {
			out = append(out, p)
		}
	}
	return out
}

// kubectl runs the test bed's kubectl against c and returns its output, or an error with its
// standard error.
func kubectl(c *testenv.Cluster, args ...string) (string, error) {
	bin, err := testenv.BinDir()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", c.KubeconfigPath}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %v: %w: %s", args, err, stderr.String())
	}
	return out.String(), nil
}

// dumpOnFailure logs, when t has failed, the pods of the release namespace and the manager's
// log of each cluster (registered after the clusters, it runs before they stop).
func dumpOnFailure(t testing.TB, clusters ...*testenv.Cluster) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		bin, err := testenv.BinDir()
		if err != nil {
			return
		}
		for _, c := range clusters {
			out, _ := exec.Command(filepath.Join(bin, "kubectl"), "--kubeconfig", c.KubeconfigPath, "-n", releaseNamespace,
				"logs", "deployment/liqo-controller-manager", "--tail=300").CombinedOutput()
			objs, _ := exec.Command(filepath.Join(bin, "kubectl"), "--kubeconfig", c.KubeconfigPath, "get", "resourceslices.authentication.liqo.io,foreignclusters.core.liqo.io,certificatesigningrequests",
				"-A", "-o", "yaml").CombinedOutput()
			t.Logf("--- %s: pods ---\n%s--- %s: manager log (tail) ---\n%s--- %s: peering objects ---\n%s",
				c.Name, describePods(context.Background(), c, releaseNamespace), c.Name, out, c.Name, objs)
			if c.RealNode != nil {
				var b strings.Builder
				for _, args := range [][]string{{"ip", "-br", "addr"}, {"ip", "route"}, {"ip", "rule"}, {"iptables-save", "-t", "nat"}} {
					out, err := c.RealNode.Command(context.Background(), args[0], args[1:]...).CombinedOutput()
					fmt.Fprintf(&b, "$ %s (%v)\n%s", strings.Join(args, " "), err, out)
				}
				t.Logf("--- %s: node %s (%s) network ---\n%s", c.Name, c.RealNode.Name, c.RealNode.IP, b.String())
			}
			gws := &corev1.PodList{}
			_ = c.Client.List(context.Background(), gws, client.HasLabels{consts.AppComponentLabel})
			for _, p := range gws.Items {
				if !strings.HasPrefix(p.Labels[consts.AppComponentLabel], "gateway-") {
					continue
				}
				log, _ := exec.Command(filepath.Join(bin, "kubectl"), "--kubeconfig", c.KubeconfigPath, "-n", p.Namespace,
					"logs", p.Name, "--tail=100").CombinedOutput()
				t.Logf("--- %s: gateway pod %s/%s (%s) log (tail) ---\n%s", c.Name, p.Namespace, p.Name, p.Status.Phase, log)
			}
		}
	})
}
