package peering_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// TestProviderNodesNotReady: when every node of the provider is NotReady (its KWOK nodes let
// go by KWOK and marked NotReady), the consumer's virtual node turns NotReady with reason
// ProviderNoReadyNode and a message naming the nodes, though the consumer may not read the
// provider's Nodes: the provider says it on its copy of the slice, and replication brings it
// back. The consumer's node lifecycle controller then taints the node not-ready, NoSchedule and
// NoExecute, as it does a real node (and as after a provider outage: the pods there are
// evicted once their toleration, 300 s by default, runs out), so a new pod bound for it waits
// Pending with that reason instead of being sent to a provider that cannot run it. A provider
// node Ready again: the virtual node is Ready again and the pod runs.
func TestProviderNodesNotReady(t *testing.T) {
	// A node of its own beside the virtual one: with none Ready in a zone, the node lifecycle
	// controller would stop tainting NoExecute (its full-disruption rule).
	a, b, st := peeredByManagers(t, testenv.ClusterOptions{ControllerManager: true, Scheduler: true, Nodes: []testenv.NodeOptions{{Name: "a-node"}}},
		testenv.ClusterOptions{ControllerManager: true, Scheduler: true,
			Nodes: []testenv.NodeOptions{{Name: "b-node-1", CPU: "4", Memory: "8Gi"}, {Name: "b-node-2", CPU: "4", Memory: "8Gi"}}})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	offloadedNamespace(t, a.Client, b.Client, "work")

	// Every provider node NotReady: KWOK lets them go, and their kubelet "reports" NotReady.
	start := time.Now()
	for _, name := range []string{"b-node-1", "b-node-2"} {
		setKWOKNodeReady(t, b.Client, name, false)
	}
	var ready corev1.NodeCondition
	testenv.Eventually(t, "the virtual node NotReady because no provider node is Ready", time.Minute, func(ctx context.Context) bool {
		ready = readyCondition(ctx, a.Client, st.VirtualNode)
		return ready.Status == corev1.ConditionFalse && ready.Reason == vnode.ReasonProviderNoReadyNode
	})
	t.Logf("virtual node NotReady %s after the provider's nodes: %s: %s", time.Since(start).Round(100*time.Millisecond), ready.Reason, ready.Message)
	if !strings.Contains(ready.Message, "0/2 nodes Ready") {
		t.Errorf("the virtual node's Ready condition says %q, want how many provider nodes there are (0/2 nodes Ready)", ready.Message)
	}
	s := &authv1beta1.ResourceSlice{}
	if err := a.Client.Get(ctx, client.ObjectKey{Namespace: st.ConsumerTenantNamespace, Name: "cl-b"}, s); err != nil ||
		s.Annotations[consts.ProviderNodesNotReadyAnnotation] != "0/2 nodes Ready" {
		t.Errorf("the consumer's slice: %v, annotations %v; want %s=0/2 nodes Ready", err, s.Annotations, consts.ProviderNodesNotReadyAnnotation)
	}
	testenv.Eventually(t, "the not-ready taints on the virtual node", time.Minute, func(ctx context.Context) bool {
		n := &corev1.Node{}
		return a.Client.Get(ctx, client.ObjectKey{Name: st.VirtualNode}, n) == nil &&
			hasTaint(n, corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule) && hasTaint(n, corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)
	})

	// A new pod for the virtual node waits, and says why.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "work", Name: "web"}, Spec: corev1.PodSpec{
		NodeSelector: map[string]string{corev1.LabelHostname: st.VirtualNode},
		Tolerations:  []corev1.Toleration{{Key: vnode.Taint.Key, Operator: corev1.TolerationOpExists}},
		Containers:   []corev1.Container{{Name: "web", Image: "web"}}}}
	if err := a.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	var why string
	testenv.Eventually(t, "the new pod unschedulable, saying why", time.Minute, func(ctx context.Context) bool {
		p := &corev1.Pod{}
		if a.Client.Get(ctx, client.ObjectKeyFromObject(pod), p) != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			// (The scheduler of v1.35 no longer names the taint: the node's condition does.)
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "untolerated taint") {
				why = c.Message
				return true
			}
		}
		return false
	})
	t.Logf("the new pod is Pending: %s", why)

	// One provider node Ready again: the virtual node is Ready, the pod runs.
	start = time.Now()
	setKWOKNodeReady(t, b.Client, "b-node-2", true)
	testenv.Eventually(t, "the virtual node Ready again", time.Minute, func(ctx context.Context) bool {
		return readyCondition(ctx, a.Client, st.VirtualNode).Status == corev1.ConditionTrue
	})
	t.Logf("virtual node Ready %s after a provider node", time.Since(start).Round(100*time.Millisecond))
	testenv.Eventually(t, "the pod Running on the virtual node", 2*time.Minute, func(ctx context.Context) bool {
		p := &corev1.Pod{}
		return a.Client.Get(ctx, client.ObjectKeyFromObject(pod), p) == nil && p.Spec.NodeName == st.VirtualNode && p.Status.Phase == corev1.PodRunning
	})
	t.Logf("the pod Running %s after the provider node", time.Since(start).Round(100*time.Millisecond))
	if err := a.Client.Get(ctx, client.ObjectKey{Namespace: st.ConsumerTenantNamespace, Name: "cl-b"}, s); err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Annotations[consts.ProviderNodesNotReadyAnnotation]; ok {
		t.Errorf("the consumer's slice still says %s=%q with a provider node Ready", consts.ProviderNodesNotReadyAnnotation, v)
	}
}

// setKWOKNodeReady makes a KWOK node NotReady, KWOK letting it go (it would make it Ready
// again at once), or hands it back to KWOK, which makes it Ready.
func setKWOKNodeReady(t *testing.T, c client.Client, name string, ready bool) {
	t.Helper()
	ctx := t.Context()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		if ready {
			n.Annotations[testenv.KWOKNodeAnnotation] = "fake"
		} else {
			delete(n.Annotations, testenv.KWOKNodeAnnotation)
		}
		return c.Update(ctx, n)
	})
	if err != nil {
		t.Fatal(err)
	}
	if ready {
		return
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason = corev1.ConditionFalse, "KubeletNotReady"
				n.Status.Conditions[i].Message, n.Status.Conditions[i].LastTransitionTime = "the test stopped it", metav1.Now()
			}
		}
		return c.Status().Update(ctx, n)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readyCondition is a node's Ready condition (empty when it has none or is not found).
func readyCondition(ctx context.Context, c client.Client, name string) corev1.NodeCondition {
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return corev1.NodeCondition{}
	}
	for _, cd := range n.Status.Conditions {
		if cd.Type == corev1.NodeReady {
			return cd
		}
	}
	return corev1.NodeCondition{}
}

func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}
