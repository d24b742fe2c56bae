// Package providernodes tells consumers, on the provider, when none of the nodes their pods may
// run on is Ready: a consumer may not read the provider's Nodes (least privilege), so the
// provider writes consts.ProviderNodesNotReadyAnnotation on its copy of each consumer's
// ResourceSlice, which the consumer's replication brings back to its slice and its virtual
// kubelet turns into the virtual node's Ready condition (False, reason ProviderNoReadyNode).
//
// The nodes of a slice are the provider's own nodes (virtual nodes excluded) that its
// status.nodeSelector selects (all of them without one). The annotation is set while there is
// at least one such node and none is Ready, and removed as soon as one is Ready again. A
// provider with no node of its own for the slice (one that shares a fixed amount and runs
// nothing itself) says nothing: nothing is known to be down.
package providernodes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Reconciler writes, on the provider's copy of each consumer's slice, whether its nodes are
// all NotReady.
type Reconciler struct {
	// Client reads Nodes and writes slices of the provider cluster.
	Client client.Client
}

// Reconcile sets or removes the annotation on one slice.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &authv1beta1.ResourceSlice{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if s.Spec.ConsumerClusterID == nil || s.Labels[consts.ReplicationLabel] == "true" {
		return reconcile.Result{}, nil // not a consumer's copy: this cluster's own request
	}
	cur, has := s.Annotations[consts.ProviderNodesNotReadyAnnotation]
	want, err := r.noReadyNode(ctx, s)
	if err != nil {
		return reconcile.Result{}, err
	}
	if cur == want && has == (want != "") {
		return reconcile.Result{}, nil
	}
	before := s.DeepCopy()
	if want == "" {
		delete(s.Annotations, consts.ProviderNodesNotReadyAnnotation)
	} else {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[consts.ProviderNodesNotReadyAnnotation] = want
	}
	if err := r.Client.Patch(ctx, s, client.MergeFrom(before)); err != nil {
		return reconcile.Result{}, fmt.Errorf("telling the consumer of ResourceSlice %s whether its nodes are Ready: %w", req, err)
	}
	log.FromContext(ctx).Info("the slice's nodes", "slice", req, "noReadyNode", want)
	return reconcile.Result{}, nil
}

// noReadyNode says, when the slice has nodes and none is Ready, how many there are; ""
// otherwise.
func (r *Reconciler) noReadyNode(ctx context.Context, s *authv1beta1.ResourceSlice) (string, error) {
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(s.Status.NodeSelector)}); err != nil {
		return "", fmt.Errorf("listing the nodes of ResourceSlice %s/%s: %w", s.Namespace, s.Name, err)
	}
	total := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Labels[consts.TypeLabel] == consts.VirtualNodeType {
			continue
		}
		total++
		if ready(n) {
			return "", nil
		}
	}
	if total == 0 {
		return "", nil
	}
	return fmt.Sprintf("0/%d nodes Ready", total), nil
}

// ready tells whether a node's Ready condition is True.
func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readinessChanges lets through Nodes created or deleted, and those whose readiness or labels
// changed (not their heartbeats).
var readinessChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		return ok1 && ok2 && (ready(o) != ready(n) || !labels.Equals(o.Labels, n.Labels))
	},
}

// SetupWithManager watches slices, and Nodes (a change of readiness re-decides every slice).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	allSlices := enqueue.Listed[*authv1beta1.ResourceSlice](mgr.GetClient(),
		func() client.ObjectList { return &authv1beta1.ResourceSliceList{} }, nil, nil)
	err := ctrl.NewControllerManagedBy(mgr).Named("provider-nodes").
		For(&authv1beta1.ResourceSlice{}).
		Watches(&corev1.Node{}, allSlices, builder.WithPredicates(readinessChanges)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the provider-nodes controller: %w", err)
	}
	return nil
}
