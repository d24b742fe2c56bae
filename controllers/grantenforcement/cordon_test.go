package grantenforcement_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestCordonedSliceRefusesNewShadowPods: a new ShadowPod coming from the virtual node of a
// slice cordoned as `liqoctl cordon resourceslice` does (liqo.io/cordon=true on the provider's
// copy) is refused, naming the slice, the annotation and the liqoctl command that lifts it; the
// ShadowPods already there stay and may be updated; the slice's other virtual nodes' slices
// are not affected. The consumer's cordon (liqo.io/cordon-consumer, mirrored from its own
// slice) and the tenant's (liqo.io/cordon-tenant) cordon too; "false" does not (upstream's
// rule). A ShadowPod naming no virtual node is refused only when every slice is cordoned.
// Uncordoned, new ShadowPods are admitted again.
func TestCordonedSliceRefusesNewShadowPods(t *testing.T) {
	p := startProvider(t)
	ctx := t.Context()
	const consumer, ns = "cl-consumer", "app-cl-consumer"
	const tenantNS = "liqo-tenant-" + consumer
	p.peer(consumer, nil, ns)
	providerID := corev1beta1.ClusterID("cl-provider")
	for _, name := range []string{"a", "b"} {
		s := p.slice(tenantNS, name, consumer, rlist("cpu", "2", "pods", "10"), authv1beta1.ResourceSliceConditionAccepted,
			map[string]string{consts.ReplicatedLabel: "true"})
		s.Spec.ProviderClusterID = &providerID // as the consumer's replication writes it
		if err := p.cl.Client.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	p.waitForWebhook(ns)
	c := p.as(consumer)
	onNode := func(name, node, cpu string) *offv1beta1.ShadowPod {
		sp := shadowPod(ns, name, cpu, "")
		if node != "" {
			sp.Labels = map[string]string{consts.OriginNodeLabel: node, consts.OriginClusterIDLabel: consumer}
		}
		return sp
	}
	nodeA, nodeB := consts.VirtualNodeName("cl-provider", "a"), consts.VirtualNodeName("cl-provider", "b")
	running := onNode("running", nodeA, "500m")
	if err := c.Create(ctx, running); err != nil {
		t.Fatalf("a ShadowPod of slice a before its cordon: %v", err)
	}
	annotate := func(slice, key, value string) {
		t.Helper()
		s := &authv1beta1.ResourceSlice{}
		if err := p.cl.Client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: slice}, s); err != nil {
			t.Fatal(err)
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		if value == "" {
			delete(s.Annotations, key)
		} else {
			s.Annotations[key] = value
		}
		if err := p.cl.Client.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// refused waits until a new ShadowPod (dry run) is refused with a message saying all parts.
	refused := func(what string, sp *offv1beta1.ShadowPod, parts ...string) {
		t.Helper()
		var last error
		testenv.Eventually(t, what, 30*time.Second, func(ctx context.Context) bool {
			last = c.Create(ctx, sp.DeepCopy(), client.DryRunAll)
			return last != nil && strings.Contains(last.Error(), "cordoned")
		})
		wantDenied(t, last, what, parts...)
		t.Logf("%s: %v", what, last)
	}
	admitted := func(what string, sp *offv1beta1.ShadowPod) {
		t.Helper()
		var last error
		testenv.Eventually(t, what, 30*time.Second, func(ctx context.Context) bool {
			last = c.Create(ctx, sp.DeepCopy(), client.DryRunAll)
			return last == nil
		})
	}

	// liqoctl cordon resourceslice a --remote-cluster-id cl-consumer
	annotate("a", consts.CordonAnnotation, "true")
	refused("a new ShadowPod of the cordoned slice a", onNode("new", nodeA, "100m"),
		"ShadowPod app-cl-consumer/new of cluster cl-consumer is refused", "ResourceSlice liqo-tenant-cl-consumer/a",
		"virtual node cl-provider-a", `annotation liqo.io/cordon="true"`,
		"liqoctl uncordon resourceslice a --remote-cluster-id cl-consumer", "those already running keep running")
	// Upstream Liqo names the virtual node after the slice alone.
	refused("a new ShadowPod of slice a through upstream's node name", onNode("new", "a", "100m"), "ResourceSlice liqo-tenant-cl-consumer/a")
	// The one already there stays, and may change (even ask for more, within the grant).
	if err := c.Get(ctx, client.ObjectKeyFromObject(running), running); err != nil {
		t.Fatalf("the ShadowPod running before the cordon: %v", err)
	}
	running.Spec.Pod.Containers[0].Resources.Requests["cpu"] = resource.MustParse("700m")
	if err := c.Update(ctx, running); err != nil {
		t.Errorf("updating the ShadowPod running before the cordon: %v", err)
	}
	// The other slice's node, and a ShadowPod naming no node (b still takes pods), are admitted.
	if err := c.Create(ctx, onNode("on-b", nodeB, "100m")); err != nil {
		t.Errorf("a ShadowPod of slice b, not cordoned: %v", err)
	}
	if err := c.Create(ctx, onNode("no-node", "", "100m")); err != nil {
		t.Errorf("a ShadowPod naming no virtual node while slice b is not cordoned: %v", err)
	}

	// The consumer cordons b on its side: mirrored here as liqo.io/cordon-consumer.
	annotate("b", consts.ConsumerCordonAnnotation, "true")
	refused("a new ShadowPod of slice b cordoned by its consumer", onNode("new-b", nodeB, "100m"),
		"ResourceSlice liqo-tenant-cl-consumer/b", `annotation liqo.io/cordon-consumer="true"`,
		"Cluster cl-consumer cordoned it on its side: that cluster lifts it by removing the annotation liqo.io/cordon from its own ResourceSlice b")
	refused("a ShadowPod naming no virtual node with every slice cordoned", onNode("no-node-2", "", "100m"),
		"every ResourceSlice granting it resources on this cluster is cordoned", "liqo-tenant-cl-consumer/a", "liqo-tenant-cl-consumer/b")

	// "false" is no cordon (upstream's rule); the tenant's cordon is one.
	annotate("a", consts.CordonAnnotation, "false")
	admitted("a ShadowPod of slice a with liqo.io/cordon=false", onNode("new", nodeA, "100m"))
	annotate("a", consts.CordonTenantAnnotation, "true")
	refused("a new ShadowPod of slice a with its tenant cordoned", onNode("new", nodeA, "100m"),
		`annotation liqo.io/cordon-tenant="true"`, "Remove the annotation liqo.io/cordon-tenant")

	// Uncordoned (liqoctl uncordon removes the annotation): admitted again.
	annotate("a", consts.CordonTenantAnnotation, "")
	annotate("b", consts.ConsumerCordonAnnotation, "")
	admitted("a ShadowPod of slice a uncordoned", onNode("new", nodeA, "100m"))
	if err := c.Create(ctx, onNode("new-b", nodeB, "100m")); err != nil {
		t.Errorf("a ShadowPod of slice b uncordoned: %v", err)
	}
	got := &offv1beta1.ShadowPodList{}
	if err := p.cl.Client.List(ctx, got, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, sp := range got.Items {
		names[sp.Name] = true
	}
	if !names["running"] || !names["on-b"] || !names["no-node"] || !names["new-b"] || len(names) != 4 {
		t.Errorf("ShadowPods at the end: %v, want running, on-b, no-node and new-b", names)
	}
}
