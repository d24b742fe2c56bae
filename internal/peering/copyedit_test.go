package peering_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// TestConsumerCopyEditKeepsPods: a consumer editing the spec of its slice's copy on the
// provider directly (with its own identity: asking for more than the provider shares, for less,
// for another class) disrupts none of its offloaded pods: the same pods keep running on the same
// virtual node, whose grant stays, and the copy's spec goes back to the consumer's slice. The
// legitimate path, the consumer's own slice changed (Peer with other resources), re-negotiates
// in place, and a denied re-negotiation keeps the grant in force: no pod restarts either.
func TestConsumerCopyEditKeepsPods(t *testing.T) {
	a, b, st := peeredByManagers(t, testenv.ClusterOptions{ControllerManager: true, Scheduler: true, Nodes: []testenv.NodeOptions{{Name: "a-node"}}},
		testenv.ClusterOptions{ControllerManager: true, Scheduler: true, Nodes: []testenv.NodeOptions{{Name: "b-node", CPU: "8", Memory: "16Gi"}}})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	copyKey := client.ObjectKey{Namespace: st.ProviderTenantNamespace, Name: "cl-b"}
	offloadedNamespace(t, a.Client, b.Client, "work")
	consumer := consumerIdentity(t, a.Client, st.ConsumerTenantNamespace, b.Client)

	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "work", Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: st.VirtualNode},
			Tolerations:  []corev1.Toleration{{Key: vnode.Taint.Key, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "web", Image: "web", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}}}
	if err := a.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	running := func(ctx context.Context) (map[types.UID]bool, error) {
		pods := &corev1.PodList{}
		if err := a.Client.List(ctx, pods, client.InNamespace("work"), client.MatchingLabels(labels)); err != nil {
			return nil, err
		}
		out := map[types.UID]bool{}
		for _, p := range pods.Items {
			out[p.UID] = p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName == st.VirtualNode
		}
		return out, nil
	}
	var before map[types.UID]bool
	testenv.Eventually(t, "2 pods Running on the virtual node", 2*time.Minute, func(ctx context.Context) bool {
		var err error
		before, err = running(ctx)
		n := 0
		for _, ok := range before {
			if ok {
				n++
			}
		}
		return err == nil && n == 2 && len(before) == 2
	})
	node := &corev1.Node{}
	if err := a.Client.Get(ctx, client.ObjectKey{Name: st.VirtualNode}, node); err != nil {
		t.Fatal(err)
	}
	// unchanged checks, for a while, that the same two pods run on the same node.
	unchanged := func(what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			now, err := running(ctx)
			n := &corev1.Node{}
			if err == nil {
				err = a.Client.Get(ctx, client.ObjectKey{Name: st.VirtualNode}, n)
			}
			same := len(now) == len(before)
			for uid := range before {
				same = same && now[uid]
			}
			if err != nil || !same || n.UID != node.UID {
				t.Errorf("after %s: pods %v (%v), node %s; want the same 2 pods Running on the same virtual node %s", what, now, err, n.UID, node.UID)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	edit := func(what string, mutate func(*authv1beta1.ResourceSlice)) {
		t.Helper()
		if err := updateSlice(ctx, consumer, copyKey, mutate); err != nil {
			t.Logf("the consumer %s: %v", what, err)
		} else {
			t.Logf("the consumer %s: accepted", what)
		}
		unchanged("the consumer " + what)
		testenv.Eventually(t, "the copy's spec back to the consumer's slice after the consumer "+what, 30*time.Second, func(ctx context.Context) bool {
			s := &authv1beta1.ResourceSlice{}
			return b.Client.Get(ctx, copyKey, s) == nil && s.Spec.Resources.Cpu().String() == "2" && s.Spec.Class == authv1beta1.ResourceSliceClassDefault
		})
	}
	edit("asks for more than the provider shares on its copy", func(s *authv1beta1.ResourceSlice) {
		s.Spec.Resources[corev1.ResourceCPU] = resource.MustParse("64")
	})
	edit("asks for less on its copy", func(s *authv1beta1.ResourceSlice) { s.Spec.Resources[corev1.ResourceCPU] = resource.MustParse("1") })
	edit("changes its copy's class", func(s *authv1beta1.ResourceSlice) { s.Spec.Class = "other" })

	// The legitimate path: the consumer's own slice, re-negotiated in place.
	if _, err := peering.Peer(ctx, a, b, peering.Options{Resources: resources("3", "4Gi", "20")}); err != nil {
		t.Fatal(err)
	}
	unchanged("a re-negotiation to 3 CPUs")
	if _, err := peering.Peer(ctx, a, b, peering.Options{Resources: resources("64", "4Gi", "20")}); err == nil {
		t.Error("a re-negotiation to 64 CPUs succeeded, want it denied")
	}
	unchanged("a denied re-negotiation to 64 CPUs")
}
