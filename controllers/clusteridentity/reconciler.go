package clusteridentity

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Reconciler re-runs Ensure whenever one of the identity objects changes or goes away.
type Reconciler struct {
	// Client reads and writes the cluster.
	Client client.Client
	// Config is the identity to keep.
	Config Config
}

// Reconcile repairs the identity objects; the request's name does not matter.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	id, err := Ensure(ctx, r.Client, r.Config)
	if err != nil {
		return reconcile.Result{}, err
	}
	log.FromContext(ctx).V(1).Info("cluster identity in place", "clusterID", id)
	return reconcile.Result{}, nil
}

// SetupWithManager watches the identity objects (in the liqo namespace, the ClusterRoles and
// the Secret admission policy) and funnels every event into one reconcile key.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: r.Config.LiqoNamespace(), Name: "cluster-identity"}}}
	})
	inLiqo := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Config.LiqoNamespace()
	}))
	peerRoles := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetName() == RemoteControlPlaneClusterRole || o.GetName() == RemoteWorkloadClusterRole || o.GetName() == SliceWorkloadClusterRole
	}))
	secretPolicy := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetName() == consts.ReflectedSecretsPolicy || o.GetName() == consts.SliceCordonPolicy ||
			o.GetName() == consts.ContractProposalPolicy
	}))
	err := ctrl.NewControllerManagedBy(mgr).
		Named("clusteridentity").
		// Metadata only: secret data is never cached. The informers' first listing triggers a
		// reconcile at start.
		Watches(&corev1.ConfigMap{}, one, inLiqo, builder.OnlyMetadata).
		Watches(&corev1.Secret{}, one, inLiqo, builder.OnlyMetadata).
		Watches(&ipamv1alpha1.Network{}, one, inLiqo).
		Watches(&rbacv1.ClusterRole{}, one, peerRoles).
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicy{}, one, secretPolicy).
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, one, secretPolicy).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the cluster identity controller: %w", err)
	}
	return nil
}
