package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/pods"
)

// liqoctlPrinted runs upstream liqoctl as sandboxRun.liqoctl does and returns all it printed
// (liqoctl prints its messages on standard error).
func (r *sandboxRun) liqoctlPrinted(t *testing.T, bin, cluster string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", filepath.Join(r.state, cluster+".kubeconfig"))...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("liqoctl %s on %s: %v\n%s", strings.Join(args, " "), cluster, err, out.Bytes())
	}
	if strings.Contains(out.String(), "WARN") || strings.Contains(out.String(), "ERRO") {
		t.Errorf("liqoctl %s on %s warns:\n%s", strings.Join(args, " "), cluster, out.Bytes())
	}
	t.Logf("liqoctl %s on %s printed:\n%s", strings.Join(args, " "), cluster, strings.TrimSpace(out.String()))
	return out.String()
}

// cordonAndUncordon: `liqoctl cordon resourceslice <slice> --remote-cluster-id consumer` on the
// provider makes the consumer's virtual node unschedulable (a pod of an offloaded Deployment
// keeps Running there; a new replica is left unscheduled), and the provider refuses the
// ShadowPod of a pod bound to the node directly, naming the slice and how to lift the cordon;
// `liqoctl uncordon resourceslice` makes the node schedulable again, and both new pods run.
func (r *sandboxRun) cordonAndUncordon(t *testing.T, bin, node, slice string) {
	t.Helper()
	ctx := t.Context()
	c := r.clients["consumer"]
	const ns = "liqoctl-cordoned"
	dep := r.offloadedDeployment(t, bin, ns, 1)
	webPods := func(ctx context.Context) ([]corev1.Pod, error) {
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return nil, err
		}
		return list.Items, nil
	}
	runningOnNode := func(ps []corev1.Pod) int {
		n := 0
		for _, p := range ps {
			if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	var first corev1.Pod
	testenv.Eventually(t, "the Deployment's pod Running on "+node, 2*time.Minute, func(ctx context.Context) bool {
		ps, err := webPods(ctx)
		if err != nil || runningOnNode(ps) != 1 {
			return false
		}
		first = ps[0]
		return true
	})

	r.liqoctlPrinted(t, bin, "provider", "cordon", "resourceslice", slice, "--remote-cluster-id", "consumer", "--skip-confirm")
	n := &corev1.Node{}
	start := time.Now()
	testenv.Eventually(t, "virtual node "+node+" unschedulable after liqoctl cordon", time.Minute, func(ctx context.Context) bool {
		return c.Get(ctx, client.ObjectKey{Name: node}, n) == nil && n.Spec.Unschedulable
	})
	t.Logf("liqoctl cordon resourceslice: virtual node %s unschedulable (SchedulingDisabled) %s after it returned",
		node, time.Since(start).Round(100*time.Millisecond))
	if n.Annotations[consts.SliceCordonNodeAnnotation] != "true" {
		t.Errorf("virtual node %s: annotations %v, want %s=true", node, n.Annotations, consts.SliceCordonNodeAnnotation)
	}

	// A new replica is not scheduled there; the running pod keeps running.
	scale := func(replicas int32) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(dep), d); err != nil {
				return err
			}
			d.Spec.Replicas = ptr.To(replicas)
			return c.Update(ctx, d)
		}); err != nil {
			t.Fatal(err)
		}
	}
	scale(2)
	var why string
	testenv.Eventually(t, "the new replica unscheduled on the cordoned node", time.Minute, func(ctx context.Context) bool {
		ps, err := webPods(ctx)
		if err != nil {
			return false
		}
		for _, p := range ps {
			for _, cd := range p.Status.Conditions {
				if p.UID != first.UID && cd.Type == corev1.PodScheduled && cd.Status == corev1.ConditionFalse {
					why = cd.Message
					return true
				}
			}
		}
		return false
	})
	t.Logf("the new replica is not scheduled: %s", why)

	// A pod bound to the node directly (no scheduler): the provider refuses its ShadowPod.
	direct := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "direct"},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{{Key: vnode.Taint.Key, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "web", Image: "web"}}}}
	if err := c.Create(ctx, direct); err != nil {
		t.Fatal(err)
	}
	var refusal string
	testenv.Eventually(t, "the provider's refusal of the direct pod's ShadowPod", time.Minute, func(ctx context.Context) bool {
		evs := &corev1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == direct.Name && e.Reason == pods.ReasonRefused && strings.Contains(e.Message, "is cordoned") {
				refusal = e.Message
				return true
			}
		}
		return false
	})
	t.Logf("the direct pod's Event: %s", refusal)
	for _, part := range []string{"ResourceSlice", "/" + slice + ",", consts.CordonAnnotation,
		"liqoctl uncordon resourceslice " + slice + " --remote-cluster-id consumer"} {
		if !strings.Contains(refusal, part) {
			t.Errorf("the refusal does not say %q: %s", part, refusal)
		}
	}
	if ps, err := webPods(ctx); err != nil || runningOnNode(ps) != 1 {
		t.Errorf("the pod running before the cordon: %d Running on %s (%v), want it still running", runningOnNode(ps), node, err)
	}
	p := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(&first), p); err != nil || p.UID != first.UID || p.Status.Phase != corev1.PodRunning {
		t.Errorf("the pod running before the cordon: %v, phase %s; want the same pod Running", err, p.Status.Phase)
	}

	r.liqoctlPrinted(t, bin, "provider", "uncordon", "resourceslice", slice, "--remote-cluster-id", "consumer", "--skip-confirm")
	start = time.Now()
	testenv.Eventually(t, "virtual node "+node+" schedulable after liqoctl uncordon", time.Minute, func(ctx context.Context) bool {
		return c.Get(ctx, client.ObjectKey{Name: node}, n) == nil && !n.Spec.Unschedulable &&
			n.Annotations[consts.SliceCordonNodeAnnotation] == ""
	})
	t.Logf("liqoctl uncordon resourceslice: virtual node %s schedulable %s after it returned", node, time.Since(start).Round(100*time.Millisecond))
	testenv.Eventually(t, "both replicas and the direct pod Running on "+node+" after the uncordon", 2*time.Minute, func(ctx context.Context) bool {
		ps, err := webPods(ctx)
		d := &corev1.Pod{}
		return err == nil && runningOnNode(ps) == 2 &&
			c.Get(ctx, client.ObjectKeyFromObject(direct), d) == nil && d.Status.Phase == corev1.PodRunning
	})
	t.Logf("after the uncordon, the new replica and the direct pod run %s after it returned", time.Since(start).Round(100*time.Millisecond))

	r.liqoctl(t, bin, "consumer", "unoffload", "namespace", ns, "--skip-confirm", "--timeout", "1m")
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
}
