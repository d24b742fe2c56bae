package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// needRealNode skips the test unless a real node can run here (root on Linux, kubelet and
// kube-proxy built, containerd, runc and the CNI plugins installed).
func needRealNode(tb testing.TB) {
	tb.Helper()
	if _, err := testenv.RealNodeBinDir(); err != nil {
		tb.Skipf("skipping the real-node test: %v", err)
	}
}

// testHTTPDeployment is a Deployment of the test image on node, with a readiness probe on
// /healthz (kubelet probes it through the pod network).
func testHTTPDeployment(name, node string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{corev1.LabelHostname: node},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name: "http", Image: testenv.TestHTTPImage, ImagePullPolicy: corev1.PullNever,
						Ports: []corev1.ContainerPort{{ContainerPort: testenv.TestHTTPPort}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(testenv.TestHTTPPort)}},
							PeriodSeconds: 1,
						},
					}},
				},
			},
		},
	}
}

// createDeployment creates a one-replica Deployment of the test image on c's real node.
func createDeployment(t *testing.T, c *testenv.Cluster) *appsv1.Deployment {
	t.Helper()
	return createOn(t, c, "web", c.RealNode.Name)
}

// createOn creates a one-replica Deployment of the test image named name on node.
func createOn(t *testing.T, c *testenv.Cluster, name, node string) *appsv1.Deployment {
	t.Helper()
	dep := testHTTPDeployment(name, node, 1)
	if err := c.Client.Create(t.Context(), dep); err != nil {
		t.Fatal(err)
	}
	return dep
}

// waitRunning waits up to 90 s until the Deployment is Available with Running pods.
func waitRunning(tb testing.TB, c *testenv.Cluster, dep *appsv1.Deployment) {
	tb.Helper()
	runningPods(tb, c, dep, 90*time.Second)
}

// runningPods waits until the Deployment is Available and returns its Running pods.
func runningPods(t testing.TB, c *testenv.Cluster, dep *appsv1.Deployment, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	testenv.Eventually(t, "Deployment "+dep.Name+" of cluster "+c.Name+" to be Available with Running pods", timeout, func(ctx context.Context) bool {
		d := &appsv1.Deployment{}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(dep), d); err != nil || d.Status.AvailableReplicas != *dep.Spec.Replicas {
			return false
		}
		list := &corev1.PodList{}
		if err := c.Client.List(ctx, list, client.InNamespace(dep.Namespace), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return false
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
		return len(pods) == int(*dep.Spec.Replicas)
	})
	return pods
}

// httpGet returns the body of GET url from inside the node's network namespace.
func httpGet(ctx context.Context, n *testenv.RealNode, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := n.HTTPClient().Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return strings.TrimSpace(string(body)), nil
}

// podURL is the test server's URL on pod p.
func podURL(p corev1.Pod, path string) string {
	return "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(testenv.TestHTTPPort)) + path
}

// kubectl runs the test bed's kubectl against the cluster and returns its output.
func kubectl(ctx context.Context, t *testing.T, c *testenv.Cluster, args ...string) (string, error) {
	t.Helper()
	binDir, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "kubectl"), append([]string{"--kubeconfig", c.KubeconfigPath}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// assertNoLeftovers fails unless nothing of the stopped Env's real nodes is left: the nodes'
// own inventory (processes, mounts, network namespaces, links, iptables rules, cgroups), no
// process naming the Env's folder, no mount under it, no namespace of ours under /run/netns.
func assertNoLeftovers(t *testing.T, env *testenv.Env, nodes []*testenv.RealNode, podNetns []string) {
	t.Helper()
	for _, n := range nodes {
		if left := n.Leftovers(context.Background()); len(left) > 0 {
			t.Errorf("real node %s left %q", n.Name, left)
		}
		if _, err := os.Stat(filepath.Join("/run/netns", n.Netns)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("network namespace %s left (%v)", n.Netns, err)
		}
	}
	if pids := testenv.ProcessesUsing(env.Dir); len(pids) > 0 {
		t.Errorf("processes naming %s left: %v", env.Dir, pids)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mountinfo), "\n") {
		if strings.Contains(line, env.Dir) {
			t.Errorf("mount left: %s", line)
		}
		for _, p := range podNetns {
			if strings.Contains(line, " "+p+" ") {
				t.Errorf("pod network namespace still mounted: %s", line)
			}
		}
	}
	for _, p := range podNetns {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pod network namespace %s left (%v)", p, err)
		}
	}
}
