package realnode

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv/upstream"
)

// upstreamWorkloads are the Deployments upstream's chart installs with networking disabled and
// the metric agent and telemetry off, by their app.kubernetes.io/name label.
var upstreamWorkloads = []string{"controller-manager", "webhook", "crd-replicator", "proxy"}

// upstreamInstallArgs are helm's arguments installing upstream Liqo v1.2.0's own chart into c
// as cluster clusterID: networking disabled (upstream's fabric needs Geneve, which this
// machine's kernel lacks), the metric agent and telemetry off (their images are not built from
// Go source alone), the images imported (never pulled), the API server at the address pods and
// peers reach it, and the cluster's pod and service CIDRs (which `liqoctl install` would find).
func upstreamInstallArgs(t *testing.T, c *testenv.Cluster, clusterID string) []string {
	t.Helper()
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"install", upstream.Release, upstream.BinDir(t) + "/chart", "--kubeconfig", c.KubeconfigPath,
		"--namespace", upstream.Namespace, "--create-namespace", "--wait", "--timeout", "4m",
		"--set", "tag=" + upstream.Version, "--set", "networking.enabled=false", "--set", "metricAgent.enabled=false",
		"--set", "telemetry.enabled=false", "--set", "pullPolicy=Never", "--set", "discovery.config.clusterID=" + clusterID,
		"--set", "ipam.podCIDR=" + c.RealNode.PodCIDR, "--set", "ipam.serviceCIDR=10.0.0.0/24",
		"--set", "apiServer.address=https://" + c.RealNode.HostIP + ":" + u.Port()}
}

// TestUpstreamChartOnRealNode installs upstream Liqo v1.2.0 with helm from its own chart into a
// cluster whose node is a real kubelet with containerd, from images our image builder made of
// binaries built from upstream's source at v1.2.0: its controller manager, webhook, CRD
// replicator and API-server proxy run as real containers and turn Ready; the controller manager
// records the cluster's identity; upstream's liqoctl reads the installation (`liqoctl info`);
// `helm uninstall` runs upstream's pre-delete hook (its uninstaller) as a real Job and removes
// the workloads and the RBAC.
func TestUpstreamChartOnRealNode(t *testing.T) {
	requireRealNodes(t)
	archives := upstream.Images(t)
	liqoctl := testenv.LiqoctlBin(t)
	ctx := t.Context()
	opts := upstream.ClusterOptions(t, "upstream")
	opts.CRDPaths = nil // helm installs them from the chart
	opts.RealNode = &testenv.RealNodeOptions{PodCIDR: "10.233.0.0/16", Images: archives}
	c := testenv.New(t, opts).Cluster("upstream")
	h := chart.New(t)

	start := time.Now()
	if out, err := h.Run(ctx, upstreamInstallArgs(t, c, "upstream-real")...); err != nil {
		t.Fatalf("helm install of upstream's chart: %v\n%s\n%s", err, out, describePods(ctx, c, upstream.Namespace))
	}
	t.Logf("helm install --wait of upstream's chart: Ready in %s", time.Since(start).Round(100*time.Millisecond))
	expectUpstreamContainers(ctx, t, c)

	cm := &corev1.ConfigMap{}
	testenv.Eventually(t, "upstream's cluster-ID ConfigMap", time.Minute, func(ctx context.Context) bool {
		return c.Client.Get(ctx, client.ObjectKey{Namespace: upstream.Namespace, Name: "liqo-clusterid-configmap"}, cm) == nil &&
			cm.Data["CLUSTER_ID"] == "upstream-real"
	})
	info := string(testenv.RunLiqoctl(t, liqoctl, c.KubeconfigPath, "info"))
	if !strings.Contains(info, "upstream-real") || !strings.Contains(info, upstream.Version) {
		t.Errorf("liqoctl info names no cluster upstream-real or version %s:\n%s", upstream.Version, info)
	}

	start = time.Now()
	if out, err := h.Run(ctx, "uninstall", upstream.Release, "--kubeconfig", c.KubeconfigPath, "--namespace", upstream.Namespace,
		"--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm uninstall of upstream's chart: %v\n%s\n%s", err, out, describePods(ctx, c, upstream.Namespace))
	}
	t.Logf("helm uninstall of upstream's chart (pre-delete hook included): %s", time.Since(start).Round(100*time.Millisecond))
	testenv.Eventually(t, "upstream's pods gone", time.Minute, func(ctx context.Context) bool {
		pods := &corev1.PodList{}
		return c.Client.List(ctx, pods, client.InNamespace(upstream.Namespace)) == nil && len(pods.Items) == 0
	})
	roles := &rbacv1.ClusterRoleList{}
	if err := c.Client.List(ctx, roles); err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		if strings.HasPrefix(r.Name, "liqo-") {
			t.Errorf("ClusterRole %s left after helm uninstall", r.Name)
		}
	}
}

// expectUpstreamContainers checks that each of upstreamWorkloads has one Ready pod whose
// containers run in containerd on the real node, from upstream's image references.
func expectUpstreamContainers(ctx context.Context, t *testing.T, c *testenv.Cluster) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.InNamespace(upstream.Namespace)); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, p := range pods.Items {
		name := p.Labels["app.kubernetes.io/name"]
		if !slices.Contains(upstreamWorkloads, name) {
			continue
		}
		seen = append(seen, name)
		ready := slices.ContainsFunc(p.Status.Conditions, func(cond corev1.PodCondition) bool {
			return cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue
		})
		if !ready || p.Spec.NodeName != c.RealNode.Name || len(p.Status.ContainerStatuses) == 0 {
			t.Errorf("upstream %s pod %s: ready %t on node %q, want Ready on %s", name, p.Name, ready, p.Spec.NodeName, c.RealNode.Name)
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if !strings.HasPrefix(cs.ContainerID, "containerd://") || !strings.HasPrefix(cs.Image, "ghcr.io/liqotech/") {
				t.Errorf("upstream %s pod %s: container %s is %q from %q, want a containerd container of upstream's image",
					name, p.Name, cs.Name, cs.ContainerID, cs.Image)
			}
		}
	}
	slices.Sort(seen)
	want := slices.Clone(upstreamWorkloads)
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Errorf("upstream's pods %v, want one of each of %v\n%s", seen, want, describePods(ctx, c, upstream.Namespace))
	}
}

// mixedRealNodes starts two clusters on real nodes: "upstream", with upstream Liqo v1.2.0
// installed by helm from its own chart (images built from its source), and "ours", with ours
// installed by helm from ours. It returns them, the helm helper, and what our node's network has
// before any peering.
func mixedRealNodes(t *testing.T) (h *chart.Helper, up, ours *testenv.Cluster, before map[*testenv.Cluster][]string) {
	t.Helper()
	oursImages, theirs := componentArchives(t), upstream.Images(t)
	ctx := t.Context()
	h = chart.New(t)
	opts := upstream.ClusterOptions(t, "upstream")
	opts.CRDPaths, opts.PodCIDR = nil, "10.234.0.0/16"
	opts.RealNode = &testenv.RealNodeOptions{PodCIDR: opts.PodCIDR, Images: theirs}
	env := testenv.New(t, opts, testenv.ClusterOptions{Name: "ours", PodCIDR: "10.235.0.0/16",
		RealNode: &testenv.RealNodeOptions{PodCIDR: "10.235.0.0/16", Images: oursImages}})
	up, ours = env.Cluster("upstream"), env.Cluster("ours")
	dumpOnFailure(t, ours)
	start := time.Now()
	if out, err := h.Run(ctx, upstreamInstallArgs(t, up, "upstream")...); err != nil {
		t.Fatalf("helm install of upstream's chart: %v\n%s\n%s", err, out, describePods(ctx, up, upstream.Namespace))
	}
	installChart(ctx, t, h, ours, installValues(ours, "ours"))
	t.Logf("both charts installed, Ready, in %s", time.Since(start).Round(100*time.Millisecond))
	return h, up, ours, map[*testenv.Cluster][]string{ours: nodeNetwork(t, ours.RealNode)}
}

// peerReal peers consumer with provider by upstream's `liqoctl peer --networking-disabled` run
// against the consumer, waits for the consumer's virtual node (named after the provider) to be
// Ready, and checks `liqoctl info peer` on both sides (testenv.ExpectInfoPeer).
func peerReal(t *testing.T, liqoctl string, consumer, provider *testenv.Cluster) {
	t.Helper()
	start := time.Now()
	testenv.RunLiqoctl(t, liqoctl, consumer.KubeconfigPath, "peer", "--remote-kubeconfig", provider.KubeconfigPath, "--networking-disabled", "--timeout", "3m")
	t.Logf("liqoctl peer %s -> %s returned in %s", consumer.Name, provider.Name, time.Since(start).Round(100*time.Millisecond))
	testenv.Eventually(t, "virtual node "+provider.Name+" Ready on "+consumer.Name, 3*time.Minute, func(ctx context.Context) bool {
		return nodeReady(ctx, consumer, provider.Name)
	})
	t.Logf("virtual node Ready %s after liqoctl peer began", time.Since(start).Round(100*time.Millisecond))
	testenv.ExpectInfoPeer(t, liqoctl, consumer.KubeconfigPath, provider.Name, "Provider")
	testenv.ExpectInfoPeer(t, liqoctl, provider.KubeconfigPath, consumer.Name, "Consumer")
}

// unpeerReal runs upstream's `liqoctl unpeer` against the consumer.
func unpeerReal(t *testing.T, liqoctl string, consumer, provider *testenv.Cluster) {
	t.Helper()
	testenv.RunLiqoctl(t, liqoctl, consumer.KubeconfigPath, "unpeer", "--remote-kubeconfig", provider.KubeconfigPath,
		"--delete-namespaces", "--skip-confirm", "--timeout", "3m")
	testenv.Eventually(t, "virtual node "+provider.Name+" gone from "+consumer.Name, 2*time.Minute, func(ctx context.Context) bool {
		return apierrors.IsNotFound(consumer.Client.Get(ctx, client.ObjectKey{Name: provider.Name}, &corev1.Node{}))
	})
}

// offloadReal offloads namespace mixed of consumer with upstream's `liqoctl offload namespace`
// (same name, Remote pods), runs a Deployment of the test HTTP image and a Service there, and
// checks: the 2 pods Running on the virtual node, each a real container on the provider's node;
// the Service reflected; `kubectl logs` and `exec` through the virtual node; after `liqoctl
// unoffload`, the namespace gone from the provider.
func offloadReal(t *testing.T, liqoctl string, consumer, provider *testenv.Cluster) {
	t.Helper()
	ctx := t.Context()
	ns := createNamespace(ctx, t, consumer, "mixed")
	testenv.RunLiqoctl(t, liqoctl, consumer.KubeconfigPath, "offload", "namespace", ns, "--namespace-mapping-strategy", "EnforceSameName",
		"--pod-offloading-strategy", "Remote", "--timeout", "2m")
	labels := map[string]string{"app": "web"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	start := time.Now()
	for _, o := range []client.Object{httpDeployment(ns, "web", labels, 2, nil), svc} {
		if err := consumer.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var local []corev1.Pod
	testenv.Eventually(t, "2 web pods Running on "+consumer.Name+"'s virtual node "+provider.Name, 3*time.Minute, func(ctx context.Context) bool {
		local = podsOn(ctx, consumer, ns, labels, provider.Name)
		return len(local) == 2
	})
	t.Logf("2 offloaded pods Running on the virtual node %s after their Deployment", time.Since(start).Round(100*time.Millisecond))
	remote := slices.DeleteFunc(runningContainers(ctx, provider, provider.RealNode.Name), func(p corev1.Pod) bool { return p.Namespace != ns })
	if len(remote) != 2 {
		t.Fatalf("%d offloaded pods run as containers on %s, want 2\n%s", len(remote), provider.RealNode.Name, describePods(ctx, provider, ns))
	}
	testenv.Eventually(t, "Service "+ns+"/web reflected to "+provider.Name, time.Minute, func(ctx context.Context) bool {
		return provider.Client.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{}) == nil
	})
	expectLogsAndExec(t, consumer, ns, local[0].Name)
	testenv.RunLiqoctl(t, liqoctl, consumer.KubeconfigPath, "unoffload", "namespace", ns, "--skip-confirm", "--timeout", "2m")
	testenv.Eventually(t, "namespace "+ns+" gone from "+provider.Name+" after unoffload", 2*time.Minute, func(ctx context.Context) bool {
		return apierrors.IsNotFound(provider.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
	})
}

// peerWithTerraformReal peers consumer with provider by examples/peering (liqo_peering,
// networking off): apply returns with the virtual node Ready, a second plan has no changes,
// destroy removes the virtual node.
func peerWithTerraformReal(t *testing.T, consumer, provider *testenv.Cluster) {
	t.Helper()
	tf := newTerraformRun(t)
	vars := []string{"consumer_kubeconfig=" + consumer.KubeconfigPath, "provider_kubeconfig=" + provider.KubeconfigPath, "networking=false",
		"cpu=500m", "memory=1Gi", "pods=20"} // within what both sides share on their one node
	_, applied := tf.mustRun(t, "peering", "apply", vars...)
	t.Logf("liqo_peering %s -> %s applied in %s", consumer.Name, provider.Name, applied.Round(100*time.Millisecond))
	if !nodeReady(t.Context(), consumer, provider.Name) {
		t.Errorf("virtual node %s on %s not Ready after apply", provider.Name, consumer.Name)
	}
	if out, _ := tf.mustRun(t, "peering", "plan", vars...); !strings.Contains(out, "No changes.") {
		t.Errorf("plan after apply of liqo_peering %s -> %s is not empty:\n%s", consumer.Name, provider.Name, out)
	}
	tf.mustRun(t, "peering", "destroy", vars...)
	testenv.Eventually(t, "virtual node "+provider.Name+" gone from "+consumer.Name+" after destroy", 2*time.Minute, func(ctx context.Context) bool {
		return apierrors.IsNotFound(consumer.Client.Get(ctx, client.ObjectKey{Name: provider.Name}, &corev1.Node{}))
	})
}

// TestUpstreamConsumerOnRealNodes: upstream Liqo v1.2.0, installed by helm from its own chart,
// consumes from ours, installed by helm from ours, both on real nodes, peered with upstream's
// `liqoctl peer --networking-disabled`, twice: upstream's virtual kubelet runs as a real
// container on its node and its virtual node turns Ready; the first time, a namespace offloaded
// with `liqoctl offload namespace` runs a Deployment's pods as real containers on our node
// (offloadReal); unpeer leaves nothing; then liqo_peering (examples/peering) peers them, plans
// quiet and destroys; `helm uninstall` at the end leaves nothing of ours.
func TestUpstreamConsumerOnRealNodes(t *testing.T) {
	requireRealNodes(t)
	liqoctl := testenv.LiqoctlBin(t)
	h, up, ours, before := mixedRealNodes(t)
	for round := 1; round <= 2; round++ {
		peerReal(t, liqoctl, up, ours)
		expectRealVirtualKubelet(t, up)
		if round == 1 {
			offloadReal(t, liqoctl, up, ours)
		}
		unpeerReal(t, liqoctl, up, ours)
	}
	peerWithTerraformReal(t, up, ours)
	uninstallLeavingNothing(t, h, before)
}

// TestOurConsumerOnRealNodes: ours consumes from upstream Liqo v1.2.0, both installed by helm
// from their own charts on real nodes, peered with upstream's `liqoctl peer
// --networking-disabled`, twice: our virtual node turns Ready; the first time, the offloaded
// namespace's pods run as real containers on upstream's node, created there by upstream's
// ShadowPod controller (offloadReal); unpeer leaves nothing; then liqo_peering
// (examples/peering) peers them, plans quiet and destroys; `helm uninstall` at the end leaves
// nothing of ours.
func TestOurConsumerOnRealNodes(t *testing.T) {
	requireRealNodes(t)
	liqoctl := testenv.LiqoctlBin(t)
	h, up, ours, before := mixedRealNodes(t)
	for round := 1; round <= 2; round++ {
		peerReal(t, liqoctl, ours, up)
		if round == 1 {
			offloadReal(t, liqoctl, ours, up)
		}
		unpeerReal(t, liqoctl, ours, up)
	}
	peerWithTerraformReal(t, ours, up)
	uninstallLeavingNothing(t, h, before)
}

// expectRealVirtualKubelet checks that the virtual kubelet upstream's controller manager
// deployed in c runs as a Ready containerd container of upstream's image on c's real node.
func expectRealVirtualKubelet(t *testing.T, c *testenv.Cluster) {
	t.Helper()
	want := upstream.ImageReference(upstream.VirtualKubelet)
	var found string
	testenv.Poll(t, "a Ready virtual-kubelet container of "+want+" on "+c.RealNode.Name, time.Minute, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.MatchingLabels{"offloading.liqo.io/component": "virtual-kubelet"}); err != nil {
			return false, err
		}
		var seen []string
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Ready && strings.HasPrefix(cs.ContainerID, "containerd://") && cs.Image == want && p.Spec.NodeName == c.RealNode.Name {
					found = p.Namespace + "/" + p.Name
					return true, nil
				}
				seen = append(seen, fmt.Sprintf("%s/%s on %q: %s ready %t, image %s, id %s", p.Namespace, p.Name, p.Spec.NodeName,
					cs.Name, cs.Ready, cs.Image, cs.ContainerID))
			}
		}
		return false, fmt.Errorf("%d pods: %v", len(pods.Items), seen)
	})
	t.Logf("upstream's virtual kubelet: pod %s, a container on %s", found, c.RealNode.Name)
}
