package virtualnode

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// syncCordon makes the Node of a cordoned slice unschedulable (spec.unschedulable: kubectl
// shows it SchedulingDisabled and the scheduler puts no new pod there; the pods on it keep
// running), and schedulable again when the slice is uncordoned. The slice is cordoned when any
// annotation of consts.SliceCordonAnnotations cordons it: the consumer's own liqo.io/cordon, or
// the provider's cordon that replication brings back as liqo.io/cordon-provider.
//
// The rule, so that nobody's cordon is undone by another and nothing flaps: the Node's
// spec.unschedulable is written only here and only at a change, each write marked or unmarked
// with consts.SliceCordonNodeAnnotation.
//   - slice cordoned, Node schedulable: made unschedulable and marked (so a `kubectl uncordon`
//     of the node while its slice is cordoned is undone once: the slice's cordon wins; lift
//     that instead);
//   - slice not cordoned, Node marked: made schedulable and unmarked;
//   - otherwise left alone: a Node someone else made unschedulable (kubectl cordon, a drain)
//     before its slice was cordoned carries no mark, so uncordoning the slice keeps their
//     cordon. (A kubectl cordon of a Node already marked changes nothing, and goes with the
//     slice's uncordon.)
//
// The VirtualNode's spec has no field for it (upstream Liqo's CRD), and the virtual kubelet
// writes only the Node's status after creating it, so the Node is patched here directly.
func (r *SliceReconciler) syncCordon(ctx context.Context, slice *authv1beta1.ResourceSlice, name string) error {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		// Not created yet: its creation brings the slice back (the Node watch).
		return client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp != nil {
		return nil
	}
	by := consts.SliceCordonedBy(slice.Annotations)
	marked := node.Annotations[consts.SliceCordonNodeAnnotation] == "true"
	before := node.DeepCopy()
	switch {
	case len(by) > 0 && !node.Spec.Unschedulable:
		node.Spec.Unschedulable = true
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[consts.SliceCordonNodeAnnotation] = "true"
	case len(by) == 0 && marked:
		node.Spec.Unschedulable = false
		delete(node.Annotations, consts.SliceCordonNodeAnnotation)
	default:
		return nil
	}
	// Optimistic lock: a concurrent kubectl cordon/uncordon is read again, not overwritten.
	if err := r.Client.Patch(ctx, node, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("setting spec.unschedulable=%t on virtual node %s of ResourceSlice %s/%s: %w",
			node.Spec.Unschedulable, name, slice.Namespace, slice.Name, err)
	}
	log.FromContext(ctx).Info("virtual node follows its slice's cordon", "node", name, "unschedulable", node.Spec.Unschedulable, "cordonedBy", by)
	return nil
}

// sliceOfNode maps a virtual Node to the consumer slice it was made from.
func (r *SliceReconciler) sliceOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	slices := &authv1beta1.ResourceSliceList{}
	if err := r.Client.List(ctx, slices, client.MatchingLabels{consts.ReplicationLabel: "true"}); err != nil {
		log.FromContext(ctx).Error(err, "listing slices to find the one of a node", "node", o.GetName())
		return nil
	}
	for i := range slices.Items {
		s := &slices.Items[i]
		if s.Spec.ProviderClusterID != nil && NameFor(s) == o.GetName() {
			return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(s)}}
		}
	}
	return nil
}

// cordonChanges lets through virtual Nodes created, and those whose schedulability or mark
// changed (not their heartbeats).
var cordonChanges = predicate.And[client.Object](
	predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[consts.TypeLabel] == consts.VirtualNodeType }),
	predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Node)
			n, ok2 := e.ObjectNew.(*corev1.Node)
			return ok1 && ok2 && (o.Spec.Unschedulable != n.Spec.Unschedulable ||
				o.Annotations[consts.SliceCordonNodeAnnotation] != n.Annotations[consts.SliceCordonNodeAnnotation])
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	},
)
