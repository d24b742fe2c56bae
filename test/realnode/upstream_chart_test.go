package realnode

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv/upstream"
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
