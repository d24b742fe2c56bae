package grantenforcement

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/finalizers"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// ReasonHeld is the reason of the Event on a copy deleted while the provider cordons it.
const ReasonHeld = "CordonHeld"

// CordonHold keeps the provider's cordon of a consumer's slice whatever the consumer does with
// its copy: the consumer writes the copy (replication), and deleting it would let replication
// create it again without the cordon. While a copy in a consumer's tenant namespace carries
// the provider's cordon (consts.ProviderCordoned) and the consumer has a Tenant there, the copy
// carries consts.ProviderCordonFinalizer: deleted, it stays, terminating and cordoned (the
// grant webhook still refuses its new ShadowPods, replication still brings the cordon back to
// the consumer's virtual node), until the provider lifts the cordon; then it goes, and
// replication makes a new copy if the consumer still has the slice. Unpeering is never held:
// the finalizer goes when the Tenant is deleted or the tenant namespace is. The
// liqo-slice-cordon policy keeps the finalizer out of the consumer's reach.
//
// This cluster's own requests to other providers (liqo.io/replication=true, a label consumers
// may not write here) are never held: the consumer's own cordon must not keep its slice.
type CordonHold struct {
	// Client reads and writes the provider cluster.
	Client client.Client
	// Recorder records, on a held copy being deleted, why it stays.
	Recorder events.EventRecorder
}

// Reconcile holds or releases one slice.
func (h *CordonHold) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &authv1beta1.ResourceSlice{}
	if err := h.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	hold, consumer, err := h.shouldHold(ctx, s)
	if err != nil {
		return reconcile.Result{}, err
	}
	held := controllerutil.ContainsFinalizer(s, consts.ProviderCordonFinalizer)
	switch {
	case !hold && held:
		log.FromContext(ctx).Info("releasing a slice: not cordoned by this cluster any more, or its peering goes", "slice", req)
		return reconcile.Result{}, finalizers.Remove(ctx, h.Client, s, consts.ProviderCordonFinalizer, "ResourceSlice")
	case hold && !held && s.DeletionTimestamp == nil:
		return reconcile.Result{}, finalizers.Add(ctx, h.Client, s, consts.ProviderCordonFinalizer, "ResourceSlice")
	case hold && held && s.DeletionTimestamp != nil:
		h.Recorder.Eventf(s, nil, corev1.EventTypeNormal, ReasonHeld, "Hold",
			"ResourceSlice %s is cordoned by this cluster (%s): deleted by cluster %s, it stays, cordoned, until the cordon is lifted "+
				"(liqoctl uncordon resourceslice %s --remote-cluster-id %s, or the Tenant made Active) or the peering is removed",
			req, annotationsOf(s, consts.SliceCordonedBy(s.Annotations)), consumer, s.Name, consumer)
	}
	return reconcile.Result{}, nil
}

// shouldHold tells whether s is a consumer's copy to hold, and names its consumer: one the
// provider cordons, in a tenant namespace that is not being deleted, whose consumer (the
// namespace's, not what the consumer wrote in the copy) has a Tenant there not being deleted.
func (h *CordonHold) shouldHold(ctx context.Context, s *authv1beta1.ResourceSlice) (bool, string, error) {
	if !consts.ProviderCordoned(s.Annotations) || s.Labels[consts.ReplicationLabel] == "true" {
		return false, "", nil
	}
	ns := &corev1.Namespace{}
	switch err := h.Client.Get(ctx, client.ObjectKey{Name: s.Namespace}, ns); {
	case apierrors.IsNotFound(err):
		return false, "", nil
	case err != nil:
		return false, "", fmt.Errorf("reading the namespace of ResourceSlice %s/%s: %w", s.Namespace, s.Name, err)
	}
	consumer := ns.Labels[consts.RemoteClusterIDLabel]
	if ns.DeletionTimestamp != nil || ns.Labels[consts.TenantNamespaceLabel] != "true" || consumer == "" {
		return false, consumer, nil
	}
	tenants := &authv1beta1.TenantList{}
	if err := h.Client.List(ctx, tenants, client.InNamespace(s.Namespace)); err != nil {
		return false, consumer, fmt.Errorf("listing the Tenants of %s: %w", s.Namespace, err)
	}
	for _, t := range tenants.Items {
		if string(t.Spec.ClusterID) == consumer && t.DeletionTimestamp == nil {
			return true, consumer, nil
		}
	}
	return false, consumer, nil
}

// SetupWithManager watches slices, and Tenants (a Tenant deleted releases the slices of its
// namespace).
func (h *CordonHold) SetupWithManager(mgr ctrl.Manager) error {
	slicesOfNamespace := enqueue.Listed[*authv1beta1.ResourceSlice](mgr.GetClient(),
		func() client.ObjectList { return &authv1beta1.ResourceSliceList{} }, enqueue.InNamespaceOf(), nil)
	err := ctrl.NewControllerManagedBy(mgr).Named("slice-cordon-hold").
		For(&authv1beta1.ResourceSlice{}).
		Watches(&authv1beta1.Tenant{}, slicesOfNamespace).
		Complete(h)
	if err != nil {
		return fmt.Errorf("building the slice cordon hold: %w", err)
	}
	return nil
}
