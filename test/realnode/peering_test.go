package realnode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
)

// terraformRun runs terraform on an example with a dev_overrides CLI configuration for a
// provider built from this tree.
type terraformRun struct {
	root, state string
	env         []string
}

// newTerraformRun builds the provider and writes the CLI configuration; it skips without
// terraform on PATH.
func newTerraformRun(t *testing.T) *terraformRun {
	t.Helper()
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Skip("terraform is not on PATH (make deps installs it)")
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bins := t.TempDir()
	build := exec.Command("go", "build", "-o", bins+"/", ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	rc := filepath.Join(bins, "terraformrc")
	cfg := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"peerkit/liqo\" = %q\n  }\n  direct {}\n}\n", bins)
	if err := os.WriteFile(rc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return &terraformRun{root: root, state: t.TempDir(), env: append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1")}
}

// mustRun runs terraform command (apply, destroy, plan) on an example with vars, failing the
// test on a non-zero exit; it returns the output and the duration.
func (r *terraformRun) mustRun(t *testing.T, example, command string, vars ...string) (string, time.Duration) {
	t.Helper()
	args := []string{"-chdir=" + filepath.Join(r.root, "examples", example), command, "-input=false", "-no-color",
		"-state=" + filepath.Join(r.state, example+".tfstate")}
	if command != "plan" {
		args = append(args, "-auto-approve")
	}
	for _, v := range vars {
		args = append(args, "-var", v)
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

// installChart installs the chart into c and waits for the manager.
func installChart(ctx context.Context, t *testing.T, h *chart.Helper, c *testenv.Cluster, clusterID string) {
	t.Helper()
	if out, err := h.Run(ctx, helmArgs(c, "install", chart.Release, chart.Dir(t), "--create-namespace",
		"--values", h.ValuesFile(installValues(c, clusterID)), "--wait", "--timeout", "3m")...); err != nil {
		t.Fatalf("helm install into %s: %v\n%s\n%s", c.Name, err, out, describePods(ctx, c, releaseNamespace))
	}
	waitClusterID(ctx, t, c, clusterID)
}

// TestPeeringOnRealNodes peers two clusters whose nodes are real kubelets, with our chart
// installed by helm: terraform apply of examples/peering, a Deployment in an offloaded namespace
// runs real containers on the provider's kubelet, kubectl logs and exec through the virtual
// node reach them, and destroy plus helm uninstall leave nothing of ours.
func TestPeeringOnRealNodes(t *testing.T) {
	requireRealNodes(t)
	h := chart.New(t)
	archives := componentArchives(t)
	tf := newTerraformRun(t)
	ctx := t.Context()
	env := testenv.New(t,
		testenv.ClusterOptions{Name: "consumer", RealNode: &testenv.RealNodeOptions{PodCIDR: "10.232.0.0/16", Images: archives}},
		testenv.ClusterOptions{Name: "provider", RealNode: &testenv.RealNodeOptions{PodCIDR: "10.233.0.0/16", Images: archives}})
	consumer, provider := env.Cluster("consumer"), env.Cluster("provider")
	dumpOnFailure(t, consumer, provider)
	installChart(ctx, t, h, consumer, "consumer")
	installChart(ctx, t, h, provider, "provider")

	vars := []string{"consumer_kubeconfig=" + consumer.KubeconfigPath, "provider_kubeconfig=" + provider.KubeconfigPath, "networking=false",
		// The real node has 2 CPUs, and the provider shares half of it.
		"cpu=1", "memory=1Gi", "pods=20"}
	_, applied := tf.mustRun(t, "peering", "apply", vars...)
	t.Logf("terraform apply examples/peering (no networking): %s to a Ready virtual node", applied.Round(100*time.Millisecond))

	// Offload a namespace and run a Deployment of the test image there.
	start := time.Now()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}
	if err := consumer.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	off := &offv1beta1.NamespaceOffloading{
		ObjectMeta: metav1.ObjectMeta{Name: "offloading", Namespace: ns.Name},
		Spec: offv1beta1.NamespaceOffloadingSpec{NamespaceMappingStrategy: offv1beta1.DefaultNameMappingStrategyType,
			PodOffloadingStrategy: offv1beta1.RemotePodOffloadingStrategyType},
	}
	if err := consumer.Client.Create(ctx, off); err != nil {
		t.Fatal(err)
	}
	// As a user would: pods created before the offloading is in place are not placed.
	testenv.Eventually(t, "NamespaceOffloading demo/offloading Ready", time.Minute, func(ctx context.Context) bool {
		return consumer.Client.Get(ctx, client.ObjectKeyFromObject(off), off) == nil && off.Status.OffloadingPhase == offv1beta1.ReadyOffloadingPhaseType
	})
	waitDefaultServiceAccount(ctx, t, consumer, ns.Name)
	labels := map[string]string{"app": "hello"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "http", Image: testenv.TestHTTPImage, ImagePullPolicy: corev1.PullNever,
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
				}}},
			},
		},
	}
	if err := consumer.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	var remote []corev1.Pod
	testenv.Eventually(t, "the Deployment's pods running as containers on the provider's kubelet", 3*time.Minute, func(ctx context.Context) bool {
		remote = runningContainers(ctx, provider, provider.RealNode.Name)
		return len(remote) == 2
	})
	t.Logf("offloaded Deployment: 2 containers Running on the provider's kubelet %s after its creation", time.Since(start).Round(100*time.Millisecond))
	testenv.Eventually(t, "the consumer's view: 2 pods Running on the virtual node", time.Minute, func(ctx context.Context) bool {
		pods := &corev1.PodList{}
		if err := consumer.Client.List(ctx, pods, client.InNamespace(ns.Name), client.MatchingLabels(labels)); err != nil {
			return false
		}
		n := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == "provider" && p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n == 2
	})

	// kubectl logs and exec on the consumer's pods reach the provider's containers through the
	// virtual kubelet.
	pods := &corev1.PodList{}
	if err := consumer.Client.List(ctx, pods, client.InNamespace(ns.Name), client.MatchingLabels(labels)); err != nil || len(pods.Items) == 0 {
		t.Fatalf("consumer pods: %v", err)
	}
	name := pods.Items[0].Name
	// The virtual kubelet's serving certificate comes from a CSR approved once its Node is
	// registered: a second or two after the node is Ready.
	var hostname, logs string
	testenv.Eventually(t, "kubectl exec through the virtual node", 30*time.Second, func(context.Context) bool {
		var err error
		hostname, err = kubectl(consumer, "-n", ns.Name, "exec", name, "--", "/test-http", "get", "http://127.0.0.1:8080/")
		return err == nil
	})
	if !strings.HasPrefix(strings.TrimSpace(hostname), "hello-") {
		t.Errorf("kubectl exec through the virtual node: got %q, want the pod's hostname", hostname)
	}
	logs, err := kubectl(consumer, "-n", ns.Name, "logs", name)
	if err != nil || !strings.Contains(logs, "GET /") {
		t.Errorf("kubectl logs through the virtual node: no request logged (%v):\n%s", err, logs)
	}

	if err := consumer.Client.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the offloaded containers gone from the provider", 2*time.Minute, func(ctx context.Context) bool {
		return len(runningContainers(ctx, provider, provider.RealNode.Name)) == 0
	})
	_, destroyed := tf.mustRun(t, "peering", "destroy", vars...)
	t.Logf("terraform destroy: %s", destroyed.Round(100*time.Millisecond))
	for _, c := range []*testenv.Cluster{consumer, provider} {
		if out, err := h.Run(ctx, helmArgs(c, "uninstall", chart.Release, "--wait", "--timeout", "3m")...); err != nil {
			t.Fatalf("helm uninstall from %s: %v\n%s\n%s", c.Name, err, out, describePods(ctx, c, releaseNamespace))
		}
		if left := leftovers(ctx, t, c); len(left) > 0 {
			t.Errorf("%s: left after destroy and helm uninstall: %v", c.Name, left)
		}
	}
}

// runningContainers lists the pods on node with every container running (real containers: a
// containerd ID), outside the system and release namespaces.
func runningContainers(ctx context.Context, c *testenv.Cluster, node string) []corev1.Pod {
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return nil
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.Namespace == releaseNamespace || strings.HasPrefix(p.Namespace, "kube-") || p.DeletionTimestamp != nil || len(p.Status.ContainerStatuses) == 0 {
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
		}
	})
}
