package testenv_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestRealNode: a cluster with a real node (containerd, kubelet, kube-proxy) and a KWOK node
// beside it. The real node is Ready; a Deployment of the test image becomes Available with
// real containers (kubelet's readiness probes pass); its pods answer HTTP at their IPs from
// the node's network namespace; `kubectl logs` and `kubectl exec` work through the API server;
// a ClusterIP Service answers from another pod; a pod reaches the API server through the
// in-cluster configuration with its ServiceAccount token. After Stop nothing is left.
func TestRealNode(t *testing.T) {
	needRealNode(t)
	start := time.Now()
	env, err := testenv.Start(t.Context(), testenv.ClusterOptions{
		Name:     "rn",
		Nodes:    []testenv.NodeOptions{{Name: "kwok-0"}},
		RealNode: &testenv.RealNodeOptions{Labels: map[string]string{"test": "real"}},
	})
	if err != nil {
		t.Fatalf("starting a cluster with a real node: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = env.Stop()
		}
	})
	c := env.Cluster("rn")
	n := c.RealNode
	ctx := t.Context()
	t.Logf("cluster with a real node up in %s (node Ready %s after containerd's start)", time.Since(start).Round(time.Millisecond), n.ReadyIn.Round(time.Millisecond))

	node := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, node); err != nil {
		t.Fatal(err)
	}
	if node.Labels["test"] != "real" || node.Annotations[testenv.KWOKNodeAnnotation] != "" {
		t.Errorf("real node labels %v, annotations %v: want test=real and no KWOK annotation", node.Labels, node.Annotations)
	}
	if !strings.HasPrefix(node.Status.NodeInfo.ContainerRuntimeVersion, "containerd://") || node.Status.NodeInfo.KubeletVersion != "v1.35.8" {
		t.Errorf("node runs %q, kubelet %q: want containerd and v1.35.8", node.Status.NodeInfo.ContainerRuntimeVersion, node.Status.NodeInfo.KubeletVersion)
	}
	if !hasAddress(node, n.IP) {
		t.Errorf("node addresses %v lack the node IP %s", node.Status.Addresses, n.IP)
	}
	refs, err := n.Images(ctx)
	if err != nil || !slices.Contains(refs, testenv.PauseImage) || !slices.Contains(refs, testenv.TestHTTPImage) {
		t.Errorf("images in the node's containerd: %v, %v; want %s and %s", refs, err, testenv.PauseImage, testenv.TestHTTPImage)
	}
	kwok := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "kwok-0"}, kwok); err != nil || !isReady(kwok) {
		t.Errorf("KWOK node beside the real node: ready %t, %v", isReady(kwok), err)
	}

	created := time.Now()
	dep := testHTTPDeployment("web", n.Name, 2)
	if err := c.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	pods := runningPods(t, c, dep, 90*time.Second)
	t.Logf("2 pods Running and Ready %s after the Deployment's creation", time.Since(created).Round(time.Millisecond))
	checkPods(t, c, n, pods)
	checkService(t, c, pods)

	podNetns := n.PodNetns(ctx)
	if len(podNetns) < 3 {
		t.Errorf("containerd reports pod network namespaces %v, want one per pod", podNetns)
	}
	if rss, err := n.RSS(); err == nil {
		t.Logf("RSS: kubelet %d MiB, containerd %d MiB, kube-proxy %d MiB", rss["kubelet"]>>20, rss["containerd"]>>20, rss["kube-proxy"]>>20)
	} else {
		t.Error(err)
	}

	stopped = true
	if err := env.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	assertNoLeftovers(t, env, []*testenv.RealNode{n}, podNetns)
}

// checkPods: each pod answers GET / with its name at its IP from the node's namespace; kubectl
// logs shows the request, kubectl exec runs the test binary in the pod.
func checkPods(t *testing.T, c *testenv.Cluster, n *testenv.RealNode, pods []corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	for _, p := range pods {
		body, err := httpGet(ctx, n, podURL(p, "/"))
		if err != nil || body != p.Name {
			t.Errorf("GET / of pod %s at %s from the node: %q, %v; want its name", p.Name, p.Status.PodIP, body, err)
		}
	}
	// The host (where the API server calls webhooks) reaches the pods through its route.
	if !n.RoutedFromHost {
		t.Errorf("the host does not route %s to the only real node", n.PodCIDR)
	}
	hostClient := &http.Client{Timeout: 5 * time.Second}
	if resp, err := hostClient.Get(podURL(pods[0], "/healthz")); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz of pod %s from the host: %v", pods[0].Name, err)
	} else {
		_ = resp.Body.Close()
	}
	p := pods[0]
	logs, err := kubectl(ctx, t, c, "logs", "-n", p.Namespace, p.Name)
	if err != nil || !strings.Contains(logs, "GET / from") {
		t.Errorf("kubectl logs %s: %q, %v; want the request logged", p.Name, logs, err)
	}
	out, err := kubectl(ctx, t, c, "exec", "-n", p.Namespace, p.Name, "--", "/test-http", "get", "http://127.0.0.1:8080/healthz")
	if err != nil || strings.TrimSpace(out) != "ok" {
		t.Errorf("kubectl exec in %s: %q, %v; want ok", p.Name, out, err)
	}
}

// checkService: a ClusterIP Service of the pods answers from another pod, and that pod reaches
// the API server's /version with its ServiceAccount token and the cluster's CA.
func checkService(t *testing.T, c *testenv.Cluster, pods []corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Selector: pods[0].Labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(testenv.TestHTTPPort)}},
		},
	}
	if err := c.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	client := testHTTPDeployment("client", pods[0].Spec.NodeName, 1)
	if err := c.Client.Create(ctx, client); err != nil {
		t.Fatal(err)
	}
	cp := runningPods(t, c, client, 60*time.Second)[0]
	names := map[string]bool{}
	for _, p := range pods {
		names[p.Name] = true
	}
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	var out string
	var err error
	testenv.Eventually(t, "the Service "+url+" to answer from pod "+cp.Name, 30*time.Second, func(ctx context.Context) bool {
		out, err = kubectl(ctx, t, c, "exec", cp.Name, "--", "/test-http", "get", url)
		return err == nil && names[strings.TrimSpace(out)]
	})
	out, err = kubectl(ctx, t, c, "exec", cp.Name, "--", "/test-http", "apiserver")
	if err != nil || !strings.Contains(out, `"gitVersion": "v1.35.8"`) {
		t.Errorf("the API server's /version from pod %s with its ServiceAccount: %q, %v", cp.Name, out, err)
	}
}

func hasAddress(node *corev1.Node, ip string) bool {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address == ip {
			return true
		}
	}
	return false
}

func isReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
