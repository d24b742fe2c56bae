package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv/upstream"
)

// upstreamCluster is the cluster that runs upstream Liqo v1.2.0's controllers in the mixed
// tests; its name is its cluster ID.
const upstreamCluster = "upstream"

// mixedBed is the mixed test bed: the sandbox's clusters run our controllers, one more cluster
// runs upstream's (controller manager, CRD replicator and webhook as processes with the
// arguments its chart gives them, networking disabled: docs/upstream-testbed.md).
type mixedBed struct {
	*sandboxRun
	up        *testenv.Cluster
	liqoctl   string
	upsConfig string
}

// startMixedBed starts the sandbox (consumer and provider) and the upstream cluster, with a
// KWOK node to share, and upstream's components on it. It skips without upstream's binaries.
func startMixedBed(t *testing.T) *mixedBed {
	t.Helper()
	upstream.BinDir(t)
	bin := liqoctlBin(t)
	r := startSandbox(t, 2)
	opts := upstream.ClusterOptions(t, upstreamCluster)
	opts.Scheduler, opts.ControllerManager, opts.KubeletAPI, opts.PodCIDR = true, true, true, "10.210.0.0/16"
	opts.Nodes = []testenv.NodeOptions{{Name: upstreamCluster + "-node-1", CPU: "8", Memory: "16Gi", PodCIDR: "10.210.1.0/24"}}
	up := testenv.New(t, opts).Cluster(upstreamCluster)
	objs := upstream.Render(t, upstreamCluster)
	upstream.Install(t, up, objs)
	upstream.StartWebhook(t, up, objs)
	upstream.StartControllerManager(t, up, objs)
	upstream.StartCRDReplicator(t, up, objs)
	return &mixedBed{sandboxRun: r, up: up, liqoctl: bin, upsConfig: up.KubeconfigPath}
}

// kubeconfig returns the kubeconfig path of a sandbox cluster or of the upstream one.
func (b *mixedBed) kubeconfig(cluster string) string {
	if cluster == upstreamCluster {
		return b.upsConfig
	}
	return filepath.Join(b.state, cluster+".kubeconfig")
}

// client returns the client of a sandbox cluster or of the upstream one.
func (b *mixedBed) client(cluster string) client.Client {
	if cluster == upstreamCluster {
		return b.up.Client
	}
	return b.clients[cluster]
}

// run runs upstream liqoctl against cluster.
func (b *mixedBed) run(t *testing.T, cluster string, args ...string) []byte {
	t.Helper()
	return testenv.RunLiqoctl(t, b.liqoctl, b.kubeconfig(cluster), args...)
}

// TestUpstreamConsumerOurProvider: a cluster running upstream Liqo v1.2.0's controllers
// consumes from one running ours, peered with upstream's `liqoctl peer --networking-disabled`,
// with no hand edit. The provider signs the consumer's slice certificate; upstream's controller
// manager makes the virtual node and its virtual kubelet's Deployment, whose container runs here
// as a process (as its ServiceAccount); the node is Ready; `liqoctl info peer` is healthy on
// both sides; a namespace offloaded with `liqoctl offload namespace` runs a Deployment's pods on
// our provider (Running back on the consumer, through our ShadowPod controller and secret
// policy, which accept upstream's reflection labels), and its Service is reflected; unoffload
// and unpeer leave nothing on our provider, and a second peering works after it.
func TestUpstreamConsumerOurProvider(t *testing.T) {
	b := startMixedBed(t)
	for round := 1; round <= 2; round++ {
		t.Logf("round %d: peering", round)
		vk := b.peerUpstreamConsumer(t)
		b.expectInfoPeer(t, upstreamCluster, "provider", "Provider")
		b.expectInfoPeer(t, "provider", upstreamCluster, "Consumer")
		if round == 1 {
			b.offloadAndRun(t)
		}
		b.run(t, upstreamCluster, "unpeer", "--remote-kubeconfig", b.kubeconfig("provider"), "--delete-namespaces", "--skip-confirm", "--timeout", "3m")
		vk.Stop()
		b.expectNothingLeft(t)
	}
}

// peerUpstreamConsumer peers the upstream cluster (consumer) with the sandbox's provider and
// runs the virtual kubelet upstream's controller manager deploys, until the virtual node is
// Ready.
func (b *mixedBed) peerUpstreamConsumer(t *testing.T) *upstream.Process {
	t.Helper()
	start := time.Now()
	b.run(t, upstreamCluster, "peer", "--remote-kubeconfig", b.kubeconfig("provider"), "--networking-disabled", "--timeout", "3m")
	t.Logf("liqoctl peer returned in %v", time.Since(start).Round(time.Millisecond))
	vk := upstream.StartVirtualKubelet(t, b.up, "liqo-tenant-provider", "provider")
	testenv.Poll(t, "virtual node provider Ready on the upstream cluster", 2*time.Minute, func(ctx context.Context) (bool, error) {
		n := &corev1.Node{}
		if err := b.up.Client.Get(ctx, client.ObjectKey{Name: "provider"}, n); err != nil {
			return false, err
		}
		return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}), nil
	})
	t.Logf("virtual node Ready %v after liqoctl peer started", time.Since(start).Round(time.Millisecond))
	return vk
}

// expectInfoPeer: `liqoctl info peer <peer> -o json` on cluster names peer in role, with
// authentication Healthy and, on the consumer, one accepted slice and a healthy virtual node.
func (b *mixedBed) expectInfoPeer(t *testing.T, cluster, peer, role string) {
	t.Helper()
	var out map[string]liqoctlPeer
	raw := b.run(t, cluster, "info", "peer", peer, "-o", "json")
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("liqoctl info peer %s -o json on %s: %v\n%s", peer, cluster, err, raw)
	}
	p := out[peer]
	ok := p.Info.Role == role && p.Authentication.Status == "Healthy" && len(p.Authentication.ResourceSlices) == 1 &&
		p.Authentication.ResourceSlices[0].Accepted
	if role == "Provider" {
		ok = ok && len(p.Offloading.VirtualNodes) == 1 && p.Offloading.VirtualNodes[0].Status == "Healthy"
	}
	if !ok {
		t.Errorf("liqoctl info peer %s on %s: want role %s, authentication Healthy, one accepted slice (and a healthy virtual node on the consumer):\n%s",
			peer, cluster, role, raw)
	}
}

// offloadAndRun offloads namespace demo of the upstream cluster to the provider and checks that
// a Deployment's pods run there and its Service is reflected, then unoffloads it.
func (b *mixedBed) offloadAndRun(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}
	if err := b.up.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	b.run(t, upstreamCluster, "offload", "namespace", "demo", "--namespace-mapping-strategy", "EnforceSameName",
		"--pod-offloading-strategy", "Remote", "--timeout", "2m")
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/e2e-test-images/agnhost:2.53",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo"}, Spec: corev1.ServiceSpec{
		Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}
	for _, o := range []client.Object{dep, svc} {
		if err := b.up.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Poll(t, "Deployment demo/web's 2 pods Running on the upstream cluster, on virtual node provider", 3*time.Minute,
		func(ctx context.Context) (bool, error) {
			return podsRunning(ctx, b.up.Client, "demo", labels, "provider", 2)
		})
	prov := b.client("provider")
	testenv.Poll(t, "the 2 offloaded pods Running on the provider, in namespace demo", time.Minute,
		func(ctx context.Context) (bool, error) { return podsRunning(ctx, prov, "demo", labels, "", 2) })
	testenv.Poll(t, "Service demo/web reflected to the provider", time.Minute, func(ctx context.Context) (bool, error) {
		return prov.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{}) == nil, nil
	})
	b.run(t, upstreamCluster, "unoffload", "namespace", "demo", "--skip-confirm", "--timeout", "2m")
	testenv.Poll(t, "namespace demo gone from the provider after unoffload", 2*time.Minute, func(ctx context.Context) (bool, error) {
		err := prov.Get(ctx, client.ObjectKey{Name: "demo"}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// podsRunning reports whether n pods labelled labels run in namespace ns (on node, when set).
func podsRunning(ctx context.Context, c client.Client, ns string, labels map[string]string, node string, n int) (bool, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		return false, err
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && (node == "" || p.Spec.NodeName == node) {
			running++
		}
	}
	if running != n {
		return false, fmt.Errorf("%d of %d pods Running (of %d)", running, n, len(pods.Items))
	}
	return true, nil
}
