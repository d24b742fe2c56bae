package realnode

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
)

// terraformRun runs terraform on an example with a dev_overrides CLI configuration for a
// provider built from this tree.
type terraformRun struct {
	root, state string
	env         []string
}

// buildBinaries builds the provider and cmds (e.g. ./cmd/liqo-sandbox) into a folder of their
// own; it skips t without terraform on PATH. It returns the repository's root and the folder.
func buildBinaries(t *testing.T, cmds ...string) (root, bins string) {
	t.Helper()
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Skip("terraform is not on PATH (make deps installs it)")
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bins = t.TempDir()
	build := exec.Command("go", append([]string{"build", "-o", bins + "/", "."}, cmds...)...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider %v: %v\n%s", cmds, err, out)
	}
	return root, bins
}

// newTerraformRun builds the provider and writes the CLI configuration; it skips without
// terraform on PATH.
func newTerraformRun(t *testing.T) *terraformRun {
	t.Helper()
	root, bins := buildBinaries(t)
	rc := filepath.Join(bins, "terraformrc")
	cfg := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"peerkit/liqo\" = %q\n  }\n  direct {}\n}\n", bins)
	if err := os.WriteFile(rc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return &terraformRun{root: root, state: t.TempDir(), env: append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1")}
}

// mustRun runs terraform command (apply, destroy, plan) on an example with vars (name=value,
// or a flag such as -target=...), failing the test on a non-zero exit; it returns the output
// and the duration.
func (r *terraformRun) mustRun(t *testing.T, example, command string, vars ...string) (string, time.Duration) {
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
func installChart(ctx context.Context, t *testing.T, h *chart.Helper, c *testenv.Cluster, values map[string]any) {
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

// TestPeeringOnRealNodes peers two clusters whose nodes are real kubelets, with our chart
// installed by helm, through terraform apply of examples/peering with its gateway exposed on a
// NodePort. Once with distinct pod CIDRs (the virtual kubelet in the controller manager), once
// with the same pod CIDR declared by both clusters (each node has its own range in it, so that
// the test host's API servers reach their own pods), which the gateways remap, with the
// virtual kubelet as a Deployment. Each time: the WireGuard gateways run as pods on the real
// nodes; a Deployment in an offloaded namespace runs real containers on the provider's kubelet;
// kubectl logs and exec through the virtual node reach them; a consumer pod reaches an
// offloaded pod over HTTP through the tunnel (at the address the consumer sees it under, and
// the provider's pod sees the consumer's under its remapped address); a Service on the
// consumer backed by the offloaded pods answers (kube-proxy's DNAT to a remapped endpoint
// and the gateway's rewrite on one node); destroy and helm uninstall
// leave no pod, namespace, interface, nftables table or CR of ours.
func TestPeeringOnRealNodes(t *testing.T) {
	requireRealNodes(t)
	for _, tc := range []peeringCase{
		{name: "distinct pod CIDRs", consumerNode: "10.232.0.0/16", providerNode: "10.233.0.0/16", virtualKubelet: "inprocess"},
		{name: "same pod CIDR, remapped", consumerNode: "10.232.0.0/24", providerNode: "10.232.1.0/24",
			clusterPodCIDR: "10.232.0.0/16", virtualKubelet: "deployment"},
	} {
		t.Run(tc.name, func(t *testing.T) { peerRealNodes(t, tc) })
	}
}

// realNodePair starts tc's consumer and provider clusters, each with a real node, and installs
// the chart into both; it returns them, the helm helper, and what each node's network has
// before any peering (nodeNetwork).
func realNodePair(t *testing.T, tc peeringCase) (h *chart.Helper, consumer, provider *testenv.Cluster, before map[*testenv.Cluster][]string) {
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
func uninstallLeavingNothing(t *testing.T, h *chart.Helper, before map[*testenv.Cluster][]string) {
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

func peerRealNodes(t *testing.T, tc peeringCase) {
	h, consumer, provider, before := realNodePair(t, tc)
	tf := newTerraformRun(t)
	ctx := t.Context()

	vars := []string{"consumer_kubeconfig=" + consumer.KubeconfigPath, "provider_kubeconfig=" + provider.KubeconfigPath,
		"gateway_service_type=NodePort",
		// The real node has 2 CPUs, and the provider shares half of it.
		"cpu=1", "memory=1Gi", "pods=20"}
	_, applied := tf.mustRun(t, "peering", "apply", vars...)
	t.Logf("terraform apply examples/peering: %s to a connected tunnel and a Ready virtual node", applied.Round(100*time.Millisecond))
	gateways := map[*testenv.Cluster]string{consumer: "gateway-client", provider: "gateway-server"}
	for c, component := range gateways {
		if pods := gatewayPods(ctx, t, c, component); len(pods) != 1 {
			t.Fatalf("%s: %d %s pods running as containers on the real node, want 1:\n%s", c.Name, len(pods), component, describePods(ctx, c, ""))
		}
		if added := slices.DeleteFunc(nodeNetwork(t, c.RealNode), func(s string) bool { return slices.Contains(before[c], s) }); len(added) == 0 {
			t.Errorf("%s: the gateway added no interface or nftables table to its node", c.Name)
		} else {
			t.Logf("%s's node: the gateway added %v", c.Name, added)
		}
	}

	ns, start := offloadNamespace(ctx, t, consumer, "demo"), time.Now()
	labels := map[string]string{"app": "hello"}
	if err := consumer.Client.Create(ctx, httpDeployment(ns, "hello", labels, 2, nil)); err != nil {
		t.Fatal(err)
	}
	var remote []corev1.Pod
	testenv.Eventually(t, "the Deployment's pods running as containers on the provider's kubelet", 3*time.Minute, func(ctx context.Context) bool {
		remote = runningContainers(ctx, provider, provider.RealNode.Name)
		return len(remote) == 2
	})
	t.Logf("offloaded Deployment: 2 containers Running on the provider's kubelet %s after its creation", time.Since(start).Round(100*time.Millisecond))
	var offloaded []corev1.Pod
	testenv.Eventually(t, "the consumer's view: 2 pods Running on the virtual node, at their addresses", time.Minute, func(ctx context.Context) bool {
		offloaded = podsOn(ctx, consumer, ns, labels, "provider")
		return len(offloaded) == 2
	})
	name := offloaded[0].Name
	expectLogsAndExec(t, consumer, ns, name)

	// A consumer pod (on the consumer's real node) reaches the offloaded pod through the tunnel,
	// at the address the consumer's view of the pod carries.
	local := createNamespace(ctx, t, consumer, "client")
	if err := consumer.Client.Create(ctx, httpDeployment(local, "local", map[string]string{"app": "local"}, 2,
		map[string]string{"kubernetes.io/hostname": consumer.RealNode.Name})); err != nil {
		t.Fatal(err)
	}
	var locals []corev1.Pod
	testenv.Eventually(t, "2 consumer pods Running on the consumer's node", 2*time.Minute, func(ctx context.Context) bool {
		locals = podsOn(ctx, consumer, local, map[string]string{"app": "local"}, consumer.RealNode.Name)
		return len(locals) == 2
	})
	client, target := locals[0], offloaded[0]
	remoteIP := remotePodIP(t, remote, name)
	if tc.clusterPodCIDR != "" && target.Status.PodIP == remoteIP {
		t.Errorf("consumer's view of %s: IP %s is the provider's own, want it under the remapped CIDR", name, remoteIP)
	}
	url := "http://" + net.JoinHostPort(target.Status.PodIP, "8080") + "/"
	var body string
	testenv.Eventually(t, "consumer pod "+client.Name+" GET "+url+" through the tunnel", time.Minute, func(context.Context) bool {
		var err error
		body, err = kubectl(consumer, "-n", local, "exec", client.Name, "--", "/test-http", "get", url)
		return err == nil
	})
	if strings.TrimSpace(body) != name {
		t.Errorf("GET %s from the consumer pod: %q, want the offloaded pod's hostname %s", url, body, name)
	}
	seen := requestSource(t, provider, remote, name)
	if tc.clusterPodCIDR == "" && seen != client.Status.PodIP {
		t.Errorf("the offloaded pod saw the request from %s, want the consumer pod's own address %s", seen, client.Status.PodIP)
	}
	if tc.clusterPodCIDR != "" && (seen == client.Status.PodIP || hostPart(seen, 16) != hostPart(client.Status.PodIP, 16)) {
		t.Errorf("the offloaded pod saw the request from %s; want the consumer pod %s under the provider's remapped CIDR (same host part)", seen, client.Status.PodIP)
	}
	t.Logf("consumer pod %s -> offloaded pod at %s (provider's %s): answered; the provider's pod saw it from %s", client.Status.PodIP, target.Status.PodIP, remoteIP, seen)

	expectService(ctx, t, consumer, ns, labels, local, client.Name, offloaded)

	// Latency: through the tunnel, and to the other consumer pod on the same node.
	tunnel := benchHTTP(t, consumer, local, client.Name, url)
	inCluster := benchHTTP(t, consumer, local, client.Name, "http://"+net.JoinHostPort(locals[1].Status.PodIP, "8080")+"/")
	t.Logf("HTTP latency, 200 requests each on a new connection: through the tunnel %s; inside the consumer cluster %s", tunnel, inCluster)
	logPodRSS(t, tc)

	for _, n := range []string{ns, local} {
		if err := consumer.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the offloaded containers gone from the provider", 2*time.Minute, func(ctx context.Context) bool {
		return len(runningContainers(ctx, provider, provider.RealNode.Name)) == 0
	})
	_, destroyed := tf.mustRun(t, "peering", "destroy", vars...)
	t.Logf("terraform destroy: %s", destroyed.Round(100*time.Millisecond))
	for c, component := range gateways {
		testenv.Eventually(t, c.Name+": the gateway pod gone and its interface and table with it", time.Minute, func(ctx context.Context) bool {
			return len(gatewayPods(ctx, t, c, component)) == 0 && slices.Equal(nodeNetwork(t, c.RealNode), before[c])
		})
	}
	uninstallLeavingNothing(t, h, before)
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
func dumpOnFailure(t *testing.T, clusters ...*testenv.Cluster) {
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
