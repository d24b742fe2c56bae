package virtualnode

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// defaultDrainGrace is how long after a pod's deletion deadline a drain waits for the virtual
// kubelet to confirm it (by removing the pod once its remote copy is gone) before removing
// the pod itself: the provider may be gone, and a node is not kept forever for it.
const defaultDrainGrace = 30 * time.Second

// drainLook is how soon a drain looks again at the node's pods while the virtual kubelet
// removes their remote copies (usually within a second: the unpeering that deleted the slice
// waits for the node to go); drainHeldLook, when a PodDisruptionBudget refused an eviction,
// which is not asked again at once.
const (
	drainLook     = 200 * time.Millisecond
	drainHeldLook = time.Second
)

// drain cordons a virtual node and evicts its pods, respecting PodDisruptionBudgets. It
// returns true once no pod is left on the node; otherwise the caller looks again after the
// returned delay.
func (r *Reconciler) drain(ctx context.Context, node string) (bool, time.Duration, error) {
	n := &corev1.Node{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: node}, n); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, 0, fmt.Errorf("reading node %s to drain it: %w", node, err)
	case !n.Spec.Unschedulable:
		before := n.DeepCopy()
		n.Spec.Unschedulable = true
		if err := r.Client.Patch(ctx, n, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
			return false, 0, fmt.Errorf("cordoning node %s: %w", node, err)
		}
	}
	pods := &corev1.PodList{}
	if err := r.reader().List(ctx, pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return false, 0, fmt.Errorf("listing the pods of node %s: %w", node, err)
	}
	if len(pods.Items) == 0 {
		return true, 0, nil
	}
	grace := r.DrainGrace
	if grace == 0 {
		grace = defaultDrainGrace
	}
	again := drainLook
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			if time.Now().After(p.DeletionTimestamp.Add(grace)) {
				// Nobody confirmed the deletion: the virtual kubelet is gone with its provider.
				err := r.Client.Delete(ctx, p, client.GracePeriodSeconds(0))
				if client.IgnoreNotFound(err) != nil {
					return false, 0, fmt.Errorf("removing pod %s/%s from drained node %s: %w", p.Namespace, p.Name, node, err)
				}
				log.FromContext(ctx).Info("removed a pod the virtual kubelet did not confirm", "pod", client.ObjectKeyFromObject(p), "node", node)
			}
			continue
		}
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
		switch err := r.Client.SubResource("eviction").Create(ctx, p, eviction); {
		case err == nil, apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err):
			again = drainHeldLook
			log.FromContext(ctx).Info("a PodDisruptionBudget holds a pod of the drained node", "pod", client.ObjectKeyFromObject(p), "node", node)
		default:
			return false, 0, fmt.Errorf("evicting pod %s/%s from node %s: %w", p.Namespace, p.Name, node, err)
		}
	}
	return false, again, nil
}

// reader lists pods by node straight from the API server (no cache of every pod needed).
func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
