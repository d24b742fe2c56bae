package realnode

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/podplacement"
	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/images"
	"github.com/peerkit/terraform-provider-liqo/internal/memlimit"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// ImagesEnv names the folder of the component images' archives (`make images` writes them to
// bin/images).
const ImagesEnv = "LIQO_IMAGES"

// componentArchives returns the archives of our images, skipping tb when they are not there.
func componentArchives(tb testing.TB) []string {
	tb.Helper()
	dir := os.Getenv(ImagesEnv)
	if dir == "" {
		tb.Skipf("%s is not set: no component images to run as pods (`make test` builds them with `make images`)", ImagesEnv)
	}
	var out []string
	for _, c := range images.Components {
		archive := filepath.Join(dir, c.Name+"-"+version.Version+".tar")
		if _, err := os.Stat(archive); err != nil {
			tb.Fatalf("%s: %v (run `make images`)", archive, err)
		}
		out = append(out, archive)
	}
	return out
}

// requireRealNodes skips tb unless real nodes can run here.
func requireRealNodes(tb testing.TB) {
	tb.Helper()
	if _, err := testenv.RealNodeBinDir(); err != nil {
		tb.Skip(err)
	}
}

// releaseNamespace is where the tests install the chart (not liqo: the manager's own namespace,
// which uninstalling must remove).
const releaseNamespace = "liqo-system"

// installValues are the chart values for cluster c: its identity, the API server as pods and
// peers reach it, and the locally imported images (never pulled).
func installValues(c *testenv.Cluster, clusterID string) map[string]any {
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		panic(err)
	}
	return map[string]any{
		"clusterID":    clusterID,
		"podCIDR":      c.RealNode.PodCIDR,
		"serviceCIDR":  "10.0.0.0/24",
		"apiServerURL": "https://" + c.RealNode.HostIP + ":" + u.Port(),
		"pullPolicy":   "Never",
		"logLevel":     "debug",
	}
}

// helmArgs returns helm's arguments for a cluster: its kubeconfig and the release namespace.
func helmArgs(c *testenv.Cluster, args ...string) []string {
	return append(args, "--kubeconfig", c.KubeconfigPath, "--namespace", releaseNamespace)
}

// TestChartOnRealNode installs the chart with helm into a cluster whose node is a real kubelet,
// from the images `make images` built: the manager runs as a real container, sets up the
// cluster's identity through its in-cluster configuration and serves its admission webhooks to
// the API server; the API-server proxy runs as a real container and, through its Service's
// cluster IP, reaches the API server and nothing else; `helm upgrade` keeps the cluster's identity; `helm uninstall` runs the
// pre-delete hook as a real Job and leaves nothing of ours.
func TestChartOnRealNode(t *testing.T) {
	requireRealNodes(t)
	h := chart.New(t)
	archives := componentArchives(t)
	ctx := t.Context()
	env := testenv.New(t, testenv.ClusterOptions{Name: "chart", RealNode: &testenv.RealNodeOptions{PodCIDR: "10.231.0.0/16", Images: archives}})
	c := env.Cluster("chart")

	start := time.Now()
	values := h.ValuesFile(installValues(c, "chart-real"))
	if out, err := h.Run(ctx, helmArgs(c, "install", chart.Release, chart.Dir(t), "--create-namespace", "--values", values, "--wait", "--timeout", "3m")...); err != nil {
		t.Fatalf("helm install: %v\n%s\n%s", err, out, describePods(ctx, c, releaseNamespace))
	}
	t.Logf("helm install --wait: manager Ready in %s", time.Since(start).Round(100*time.Millisecond))
	pod := managerPod(ctx, t, c)
	if pod.Spec.NodeName != c.RealNode.Name || len(pod.Status.ContainerStatuses) == 0 ||
		!strings.HasPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://") {
		t.Fatalf("manager pod %s is not a container on the real node: node %q, statuses %+v", pod.Name, pod.Spec.NodeName, pod.Status.ContainerStatuses)
	}
	if rss, err := processRSS("liqo-controller-manager"); err == nil {
		t.Logf("controller manager pod RSS: %.1f MiB", float64(rss)/(1<<20))
	}
	firstID := waitClusterID(ctx, t, c, "chart-real")
	expectAPIServerProxy(ctx, t, c)

	// The API server calls the pod-placement webhook the manager serves from its pod: a pod in a
	// scheduling-enabled namespace with a NamespaceOffloading is admitted (the webhook fails
	// closed) and given the virtual nodes' toleration.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "offloaded", Labels: map[string]string{consts.SchedulingEnabledLabel: "true"}}}
	if err := c.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	off := &offv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Name: consts.NamespaceOffloadingName, Namespace: ns.Name},
		Spec: offv1beta1.NamespaceOffloadingSpec{PodOffloadingStrategy: offv1beta1.RemotePodOffloadingStrategyType}}
	if err := c.Client.Create(ctx, off); err != nil {
		t.Fatal(err)
	}
	waitDefaultServiceAccount(ctx, t, c, ns.Name)
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns.Name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "http", Image: testenv.TestHTTPImage, ImagePullPolicy: corev1.PullNever}}},
	}
	// The webhook reads the NamespaceOffloading from the manager's cache: until it is there, pods
	// pass unchanged; the test makes pods until one is placed, and fails if none is.
	got := &corev1.Pod{}
	testenv.Eventually(t, "a pod placed by the manager's webhook", 30*time.Second, func(ctx context.Context) bool {
		_ = c.Client.Delete(ctx, probe.DeepCopy())
		if err := c.Client.Create(ctx, probe.DeepCopy()); err != nil {
			return false
		}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(probe), got); err != nil {
			return false
		}
		return slices.ContainsFunc(got.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.MatchToleration(&podplacement.Toleration) })
	})
	if err := c.Client.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// Uninstalling refuses while objects of ours (the NamespaceOffloading) exist.
	testenv.Eventually(t, "namespace offloaded gone", time.Minute, func(ctx context.Context) bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}))
	})

	// An upgrade that changes the manager's flags rolls its pod; the identity stays. It also
	// gives the manager a memory limit, 90 % of which its Go runtime takes as a soft limit.
	upgraded := installValues(c, "chart-real")
	upgraded["sharePercent"] = 40
	upgraded["resources"] = map[string]any{"limits": map[string]any{"memory": "512Mi"}}
	if out, err := h.Run(ctx, helmArgs(c, "upgrade", chart.Release, chart.Dir(t), "--values", h.ValuesFile(upgraded), "--wait", "--timeout", "3m")...); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	testenv.Eventually(t, "the upgraded manager pod Ready", 2*time.Minute, func(ctx context.Context) bool {
		p, err := readyManagerPod(ctx, c)
		return err == nil && p.UID != pod.UID && strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--share-percent=40")
	})
	expectSoftMemoryLimit(ctx, t, c, 512<<20)
	if id := waitClusterID(ctx, t, c, "chart-real"); id != firstID {
		t.Errorf("cluster-ID ConfigMap changed across the upgrade: %s, then %s", firstID, id)
	}

	// Uninstall: the pre-delete hook's Job runs `liqo-controller-manager uninstall` as a real
	// container, then helm removes the chart's objects.
	start = time.Now()
	if out, err := h.Run(ctx, helmArgs(c, "uninstall", chart.Release, "--wait", "--timeout", "3m")...); err != nil {
		t.Fatalf("helm uninstall: %v\n%s\n%s", err, out, describePods(ctx, c, releaseNamespace))
	}
	t.Logf("helm uninstall (hook included): %s", time.Since(start).Round(100*time.Millisecond))
	if left := leftovers(ctx, t, c); len(left) > 0 {
		t.Errorf("left after helm uninstall: %v", left)
	}
}

// expectAPIServerProxy checks the chart's API-server proxy: its pod is a Running, Ready container
// on the real node, and a client on the node reaches the API server through a CONNECT to the
// Service liqo-proxy's cluster IP (kube-proxy's DNAT to the pod): at the in-cluster address
// (the kubernetes Service) and at apiServerURL's host:port, as peers address it; another target
// is refused.
func expectAPIServerProxy(ctx context.Context, t testing.TB, c *testenv.Cluster) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.InNamespace(releaseNamespace), client.MatchingLabels{consts.AppNameLabel: consts.APIServerProxyApp}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d API-server proxy pods, want 1\n%s", len(pods.Items), describePods(ctx, c, releaseNamespace))
	}
	pod := pods.Items[0]
	if pod.Status.Phase != corev1.PodRunning || pod.Spec.NodeName != c.RealNode.Name || len(pod.Status.ContainerStatuses) != 1 ||
		!pod.Status.ContainerStatuses[0].Ready || !strings.HasPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://") {
		t.Fatalf("the API-server proxy pod %s is not a Ready container on the real node\n%s", pod.Name, describePods(ctx, c, releaseNamespace))
	}
	if rss, err := processRSS("liqo-proxy"); err == nil {
		t.Logf("API-server proxy pod RSS: %.1f MiB", float64(rss)/(1<<20))
	}
	svc := &corev1.Service{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: consts.APIServerProxyService}, svc); err != nil {
		t.Fatal(err)
	}
	proxyURL := &url.URL{Scheme: "http", Host: net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(consts.APIServerProxyPort))}
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	kubernetesSvc := &corev1.Service{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "kubernetes"}, kubernetesSvc); err != nil {
		t.Fatal(err)
	}
	through := func(host string) error {
		cfg := rest.CopyConfig(c.Config)
		cfg.Host = "https://" + host
		cfg.Proxy = http.ProxyURL(proxyURL)
		cfg.Dial = c.RealNode.DialContext
		cfg.Timeout = 10 * time.Second
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("a client of %s: %w", host, err)
		}
		v, err := kube.Discovery().ServerVersion()
		if err != nil {
			return fmt.Errorf("GET https://%s/version through the proxy %s: %w", host, proxyURL.Host, err)
		}
		t.Logf("through the API-server proxy (Service %s, %s): the API server at %s, %s", consts.APIServerProxyService, proxyURL.Host, host, v.GitVersion)
		return nil
	}
	for _, host := range []string{net.JoinHostPort(kubernetesSvc.Spec.ClusterIP, "443"), net.JoinHostPort(c.RealNode.HostIP, u.Port())} {
		// The Service's endpoints and kube-proxy's rules follow the pod's readiness shortly.
		testenv.EventuallyOK(t, "the API server at "+host+" through the API-server proxy", 30*time.Second, func() error { return through(host) })
	}
	// The API server's loopback address, which no client on the node means: not allowed.
	if err := through(net.JoinHostPort("127.0.0.1", u.Port())); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("a CONNECT to a target the proxy does not allow: %v, want 403 Forbidden", err)
	}
	// The manager records the Service (in the release's namespace) as the IP api-server-proxy
	// of the Liqo namespace, with an address of the external CIDR: what in-band peers dial.
	ip := &ipamv1alpha1.IP{}
	testenv.EventuallyOK(t, "the IP "+consts.APIServerProxyIP+" of the proxy's cluster IP", 30*time.Second, func() error {
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.APIServerProxyIP}, ip); err != nil {
			return err
		}
		if string(ip.Spec.IP) != svc.Spec.ClusterIP || ip.Status.IP == "" {
			return fmt.Errorf("IP %s: spec.ip %s, status.ip %q; want the Service's cluster IP %s and an external address",
				consts.APIServerProxyIP, ip.Spec.IP, ip.Status.IP, svc.Spec.ClusterIP)
		}
		return nil
	})
	t.Logf("the API-server proxy's IP: %s, reached by peers at %s (%s)", ip.Spec.IP, ip.Status.IP, ip.Status.CIDR)
}

// managerPod returns the manager's pod.
func managerPod(ctx context.Context, t testing.TB, c *testenv.Cluster) *corev1.Pod {
	t.Helper()
	p, err := readyManagerPod(ctx, c)
	if err != nil {
		t.Fatalf("%v\n%s", err, describePods(ctx, c, releaseNamespace))
	}
	return p
}

// readyManagerPod returns the manager's one Ready pod, or an error saying why there is none.
func readyManagerPod(ctx context.Context, c *testenv.Cluster) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.InNamespace(releaseNamespace), client.MatchingLabels{consts.AppNameLabel: "controller-manager"}); err != nil {
		return nil, fmt.Errorf("listing the manager's pods: %w", err)
	}
	var ready []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready = append(ready, p)
			}
		}
	}
	if len(ready) != 1 {
		return nil, fmt.Errorf("%d Ready manager pods of %d, want 1", len(ready), len(pods.Items))
	}
	return &ready[0], nil
}

// waitClusterID waits for the cluster-ID ConfigMap the manager writes to name id, and returns
// its UID.
func waitClusterID(ctx context.Context, t testing.TB, c *testenv.Cluster, id string) string {
	t.Helper()
	var uid string
	testenv.Eventually(t, "the cluster-ID ConfigMap", time.Minute, func(ctx context.Context) bool {
		cms := &corev1.ConfigMapList{}
		if err := c.Client.List(ctx, cms, client.InNamespace(consts.LiqoNamespace), client.MatchingLabels{consts.AppNameLabel: consts.ClusterIDConfigMapApp}); err != nil {
			return false
		}
		for _, cm := range cms.Items {
			for _, v := range cm.Data {
				if v == id {
					uid = string(cm.UID)
					return true
				}
			}
		}
		return false
	})
	return uid
}

// waitDefaultServiceAccount waits for a namespace's default ServiceAccount (pods need it).
func waitDefaultServiceAccount(ctx context.Context, t testing.TB, c *testenv.Cluster, ns string) {
	t.Helper()
	testenv.Eventually(t, "ServiceAccount default in "+ns, 30*time.Second, func(ctx context.Context) bool {
		return c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{}) == nil
	})
}

// leftovers lists what of ours is still in the cluster after `helm uninstall --wait` (see
// listLeftovers), waiting up to 90 s for it to go: helm waits for the Deployments it deletes,
// not for their pods, which the garbage collector removes after (the API-server proxy's; the
// manager's are gone before, its Deployment scaled to zero by the uninstall hook); a
// DaemonSet's pod on a node removed before (TestPeeringAcrossNodes' churn) has no kubelet to
// end it and waits for kube-controller-manager's pod GC, which deletes such orphans after up
// to about a minute.
func leftovers(ctx context.Context, t testing.TB, c *testenv.Cluster) []string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		left := listLeftovers(ctx, t, c)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		select {
		case <-ctx.Done():
			return left
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// listLeftovers lists what of ours is in the cluster: liqo.io CRDs, the liqo namespace (even
// Terminating), webhook configurations and ClusterRoles named liqo-*, and any object in the
// release namespace made by the chart or the manager.
func listLeftovers(ctx context.Context, t testing.TB, c *testenv.Cluster) []string {
	t.Helper()
	var left []string
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.Client.List(ctx, crds); err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds.Items {
		if strings.HasSuffix(crd.Spec.Group, "liqo.io") {
			left = append(left, "CRD "+crd.Name)
		}
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: consts.LiqoNamespace}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		left = append(left, "namespace "+consts.LiqoNamespace+" ("+fmt.Sprint(err)+")")
	}
	lists := map[string]client.ObjectList{
		"Deployment": &appsv1.DeploymentList{}, "Pod": &corev1.PodList{}, "ServiceAccount": &corev1.ServiceAccountList{},
		"Service": &corev1.ServiceList{}, "Secret": &corev1.SecretList{}, "ConfigMap": &corev1.ConfigMapList{},
	}
	for kind, list := range lists {
		if err := c.Client.List(ctx, list, client.InNamespace(releaseNamespace)); err != nil {
			t.Fatal(err)
		}
		items, err := metaItems(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			name := o.GetName()
			if kind == "ServiceAccount" && name == "default" || kind == "ConfigMap" && name == "kube-root-ca.crt" {
				continue
			}
			left = append(left, kind+" "+releaseNamespace+"/"+name)
		}
	}
	for _, kind := range []string{"ClusterRoleList", "ClusterRoleBindingList", "ValidatingWebhookConfigurationList", "MutatingWebhookConfigurationList"} {
		left = append(left, namedLiqo(ctx, t, c, kind)...)
	}
	return left
}

// processRSS is the resident memory of the host's first process named name (containers'
// processes are host processes in other namespaces).
func processRSS(name string) (int64, error) {
	if all := processRSSAll(name); len(all) > 0 {
		return all[0], nil
	}
	return 0, fmt.Errorf("no process %s", name)
}

// pidRSS is the resident memory of process pid if its name is name.
func pidRSS(pid, name string) (int64, error) {
	comm, err := os.ReadFile(filepath.Join("/proc", pid, "comm"))
	if err != nil || strings.TrimSpace(string(comm)) != name[:min(len(name), 15)] {
		return 0, fmt.Errorf("process %s is not %s", pid, name)
	}
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return 0, fmt.Errorf("reading the status of process %s: %w", pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("process %s has no VmRSS", pid)
}

// expectSoftMemoryLimit checks that the Ready manager's container, limited to limit bytes of
// memory, gave its Go runtime memlimit.Share of it (its log says so).
func expectSoftMemoryLimit(ctx context.Context, t *testing.T, c *testenv.Cluster, limit int64) {
	t.Helper()
	p, err := readyManagerPod(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`"bytes":%d`, int64(float64(limit)*memlimit.Share))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		logs, err := kubectl(c, "-n", p.Namespace, "logs", p.Name, "-c", p.Spec.Containers[0].Name)
		if err == nil && strings.Contains(logs, "soft memory limit") && strings.Contains(logs, want) {
			return
		}
		if time.Now().After(deadline) {
			if len(logs) > 3000 {
				logs = logs[:3000]
			}
			t.Fatalf("the manager limited to %d bytes of memory does not log its soft limit (%s): %v\n%s", limit, want, err, logs)
		}
	}
}
