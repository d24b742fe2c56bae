package realnode

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/gateway/nat"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// createNamespace creates namespace name in c and waits for its default ServiceAccount (pods
// need it); it returns name.
func createNamespace(ctx context.Context, t testing.TB, c *testenv.Cluster, name string) string {
	t.Helper()
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	waitDefaultServiceAccount(ctx, t, c, name)
	return name
}

// offloadNamespace creates namespace name in c with a NamespaceOffloading that sends its pods to
// the provider, and waits until the offloading is Ready (as a user would: pods created before
// it is in place are not placed); it returns name.
func offloadNamespace(ctx context.Context, t testing.TB, c *testenv.Cluster, name string) string {
	t.Helper()
	createNamespace(ctx, t, c, name)
	off := &offv1beta1.NamespaceOffloading{
		ObjectMeta: metav1.ObjectMeta{Name: "offloading", Namespace: name},
		Spec: offv1beta1.NamespaceOffloadingSpec{NamespaceMappingStrategy: offv1beta1.DefaultNameMappingStrategyType,
			PodOffloadingStrategy: offv1beta1.RemotePodOffloadingStrategyType},
	}
	if err := c.Client.Create(ctx, off); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "NamespaceOffloading "+name+"/offloading Ready", time.Minute, func(ctx context.Context) bool {
		return c.Client.Get(ctx, client.ObjectKeyFromObject(off), off) == nil && off.Status.OffloadingPhase == offv1beta1.ReadyOffloadingPhaseType
	})
	return name
}

// httpDeployment is a Deployment of the test HTTP image (serving :8080), never pulled.
func httpDeployment(ns, name string, labels map[string]string, replicas int32, nodeSelector map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeSelector: nodeSelector, Containers: []corev1.Container{{
					Name: "http", Image: testenv.TestHTTPImage, ImagePullPolicy: corev1.PullNever,
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
				}}},
			},
		},
	}
}

// podsOn lists the pods of ns with labels that run on node and have an IP.
func podsOn(ctx context.Context, c *testenv.Cluster, ns string, labels map[string]string, node string) []corev1.Pod {
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		return nil
	}
	return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
		return p.Spec.NodeName != node || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil
	})
}

// expectLogsAndExec checks that kubectl exec and kubectl logs on the consumer's pod name reach
// its container on the provider through the virtual kubelet.
func expectLogsAndExec(t testing.TB, consumer *testenv.Cluster, ns, name string) {
	t.Helper()
	// The virtual kubelet's serving certificate comes from a CSR approved once its Node is
	// registered: a second or two after the node is Ready.
	var hostname string
	testenv.Eventually(t, "kubectl exec through the virtual node", 30*time.Second, func(context.Context) bool {
		var err error
		hostname, err = kubectl(consumer, "-n", ns, "exec", name, "--", "/test-http", "get", "http://127.0.0.1:8080/")
		return err == nil
	})
	if strings.TrimSpace(hostname) != name {
		t.Errorf("kubectl exec through the virtual node: got %q, want the pod's hostname %s", hostname, name)
	}
	logs, err := kubectl(consumer, "-n", ns, "logs", name)
	if err != nil || !strings.Contains(logs, "GET /") {
		t.Errorf("kubectl logs through the virtual node: no request logged (%v):\n%s", err, logs)
	}
}

var requestLine = regexp.MustCompile(`GET / from (\S+):\d+`)

// requestSource reads, from the provider's own log of pod name, the source address of the
// last request from outside the pod.
func requestSource(t testing.TB, provider *testenv.Cluster, remote []corev1.Pod, name string) string {
	t.Helper()
	i := slices.IndexFunc(remote, func(p corev1.Pod) bool { return p.Name == name })
	if i < 0 {
		t.Fatalf("no pod %s among the provider's", name)
	}
	logs, err := kubectl(provider, "-n", remote[i].Namespace, "logs", name)
	if err != nil {
		t.Fatal(err)
	}
	var src string
	for _, m := range requestLine.FindAllStringSubmatch(logs, -1) {
		if m[1] != "127.0.0.1" {
			src = m[1]
		}
	}
	if src == "" {
		t.Fatalf("no request from outside in the provider's log of %s:\n%s", name, logs)
	}
	return src
}

// expectService creates a ClusterIP Service on the consumer selecting the offloaded pods, and
// checks that its EndpointSlice lists their addresses and that it answers the consumer pod.
func expectService(ctx context.Context, t testing.TB, consumer *testenv.Cluster, ns string, labels map[string]string,
	clientNs, clientPod string, offloaded []corev1.Pod) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if err := consumer.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range offloaded {
		want = append(want, p.Status.PodIP)
	}
	slices.Sort(want)
	testenv.Eventually(t, "the Service's endpoints: the offloaded pods' addresses", time.Minute, func(ctx context.Context) bool {
		eps := &discoveryv1.EndpointSliceList{}
		if err := consumer.Client.List(ctx, eps, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
			return false
		}
		var got []string
		for _, s := range eps.Items {
			for _, ep := range s.Endpoints {
				got = append(got, ep.Addresses...)
			}
		}
		slices.Sort(got)
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	url := "http://" + svc.Spec.ClusterIP + "/"
	var body string
	testenv.Eventually(t, "consumer pod GET "+url+" (Service hello, backed by the offloaded pods)", time.Minute, func(context.Context) bool {
		var err error
		body, err = kubectl(consumer, "-n", clientNs, "exec", clientPod, "--", "/test-http", "get", url)
		return err == nil
	})
	if !slices.ContainsFunc(offloaded, func(p corev1.Pod) bool { return p.Name == strings.TrimSpace(body) }) {
		t.Errorf("Service hello answered %q, want one of the offloaded pods", body)
	}
	t.Logf("Service hello (%s) on the consumer, endpoints %v: answered by %s", svc.Spec.ClusterIP, want, strings.TrimSpace(body))
}

// benchHTTP runs the test image's bench (200 sequential GETs on new connections) in pod and
// returns its result line.
func benchHTTP(t testing.TB, c *testenv.Cluster, ns, pod, url string) string {
	t.Helper()
	out, err := kubectl(c, "-n", ns, "exec", pod, "--", "/test-http", "bench", "200", url)
	if err != nil {
		t.Fatalf("bench %s from %s: %v", url, pod, err)
	}
	return strings.TrimSpace(out)
}

// logPodRSS logs the resident memory of our pods' processes on the host: the controller
// managers, the gateways and, when it runs as a Deployment, the virtual kubelet.
func logPodRSS(t testing.TB, virtualKubelet string) {
	t.Helper()
	names := []string{"liqo-controller-manager", "liqo-gateway"}
	if virtualKubelet == "deployment" {
		names = append(names, "liqo-virtual-kubelet")
	}
	for _, name := range names {
		logProcessRSS(t, name)
	}
}

// logProcessRSS logs the resident memory of every host process named name.
func logProcessRSS(t testing.TB, name string) {
	t.Helper()
	var mib []string
	for _, rss := range processRSSAll(name) {
		mib = append(mib, fmt.Sprintf("%.1f MiB", float64(rss)/(1<<20)))
	}
	t.Logf("RSS of %s processes: %v", name, mib)
}

// processRSSAll is the resident memory of every host process named name.
func processRSSAll(name string) []int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if rss, err := pidRSS(e.Name(), name); err == nil {
			out = append(out, rss)
		}
	}
	return out
}

// gatewayPods lists the pods of component (gateway-server, gateway-client) that run as
// containers on the cluster's real node, in its network namespace.
func gatewayPods(ctx context.Context, t testing.TB, c *testenv.Cluster, component string) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.MatchingLabels{consts.AppComponentLabel: component}); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
		onRealNode := slices.ContainsFunc(c.RealNodes, func(n *testenv.RealNode) bool { return n.Name == p.Spec.NodeName })
		return !p.Spec.HostNetwork || !onRealNode || len(p.Status.ContainerStatuses) == 0 ||
			p.Status.ContainerStatuses[0].State.Running == nil || !strings.HasPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	})
}

// nodeNetwork lists what a gateway adds to a node's network namespace: its links (but the
// pods' veths), the gateways' nftables tables and the policy-routing rules, sorted.
func nodeNetwork(t testing.TB, n *testenv.RealNode) []string {
	t.Helper()
	var out []string
	links, err := n.Command(t.Context(), "ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatalf("ip link in node %s: %v", n.Name, err)
	}
	for _, line := range strings.Split(string(links), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if !strings.HasPrefix(name, "veth") {
			out = append(out, "link "+name)
		}
	}
	rules, err := n.Command(t.Context(), "ip", "rule", "show").Output()
	if err != nil {
		t.Fatalf("ip rule in node %s: %v", n.Name, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(rules)), "\n") {
		out = append(out, "rule "+strings.Join(strings.Fields(line), " "))
	}
	var tables []string
	if err := netns.Do(netns.Named(n.Netns), func() (err error) {
		tables, err = nat.Tables()
		return err
	}); err != nil {
		t.Fatalf("nftables tables of node %s: %v", n.Name, err)
	}
	for _, tb := range tables {
		out = append(out, "nftables table "+tb)
	}
	slices.Sort(out)
	return out
}
