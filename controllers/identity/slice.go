package identity

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/nonce"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// SliceReconciler is the consumer's side of its ResourceSlices' certificates, as upstream
// Liqo's consumers do it: every slice this cluster asks a provider for (labelled
// consts.ReplicationLabel=true, whoever wrote it: the provider's liqo_resource_slice or
// liqo_peering resources, liqoctl, a user) gets spec.providerClusterID (its
// consts.RemoteClusterIDLabel, else its tenant namespace's) and spec.csr
// (signing.KeyPair.ResourceSliceCSR with the cluster's signing key, for this cluster's ID) when
// it lacks them. Unlike upstream, spec.consumerClusterID is left as its writer made it (a
// liqo_resource_slice that does not set it would see a change to replace): the replication
// writes this cluster's ID into the provider's copy, and the request is for that ID. Once the
// provider answers in status.authParams, the slice's Identity forge.ResourceSliceIdentityName
// (type ResourceSlice) holds them, and Reconciler turns it into a kubeconfig Secret. The
// Identity goes when the provider denies the slice's authentication.
type SliceReconciler struct {
	// Client reads and writes the consumer cluster; LiqoNamespace is where its signing key and
	// ID are ("": consts.LiqoNamespace).
	Client        client.Client
	LiqoNamespace string
}

// Reconcile completes one slice's request, or makes its Identity from the provider's answer.
func (r *SliceReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	slice := &authv1beta1.ResourceSlice{}
	switch err := r.Client.Get(ctx, req.NamespacedName, slice); {
	case err != nil:
		return reconcile.Result{}, client.IgnoreNotFound(err)
	case slice.DeletionTimestamp != nil, slice.Labels[consts.ReplicationLabel] != "true":
		return reconcile.Result{}, nil // going, or a consumer's request to this cluster (the provider side decides it)
	}
	if done, err := r.complete(ctx, slice); err != nil || done {
		return reconcile.Result{}, err // a change brings the slice back
	}
	id := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: slice.Namespace, Name: forge.ResourceSliceIdentityName(slice.Name)}}
	for _, c := range slice.Status.Conditions {
		if c.Type == authv1beta1.ResourceSliceConditionTypeAuthentication && c.Status == authv1beta1.ResourceSliceConditionDenied {
			if err := r.Client.Delete(ctx, id); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting Identity %s of denied ResourceSlice %s: %w", id.Name, req, err)
			}
			return reconcile.Result{}, nil
		}
	}
	if slice.Status.AuthParams == nil || len(slice.Status.AuthParams.SignedCRT) == 0 {
		return reconcile.Result{}, nil // not signed yet
	}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, id, func() error {
		forge.MutateResourceSliceIdentity(id, slice)
		return controllerutil.SetControllerReference(slice, id, r.Client.Scheme())
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("writing Identity %s of ResourceSlice %s: %w", id.Name, req, err)
	}
	return reconcile.Result{}, nil
}

// complete sets the slice's provider and certificate request when missing, and tells whether it
// changed the slice.
func (r *SliceReconciler) complete(ctx context.Context, slice *authv1beta1.ResourceSlice) (bool, error) {
	if slice.Spec.ProviderClusterID != nil && len(slice.Spec.CSR) > 0 {
		return false, nil
	}
	key, local, err := nonce.LocalIdentity(ctx, r.Client, consts.LiqoNamespaceOr(r.LiqoNamespace))
	if err != nil {
		return false, fmt.Errorf("ResourceSlice %s/%s: %w", slice.Namespace, slice.Name, err)
	}
	before := slice.DeepCopy()
	if slice.Spec.ProviderClusterID == nil {
		provider := slice.Labels[consts.RemoteClusterIDLabel]
		if provider == "" {
			ns := &corev1.Namespace{}
			if err := r.Client.Get(ctx, client.ObjectKey{Name: slice.Namespace}, ns); err != nil {
				return false, fmt.Errorf("reading the namespace of ResourceSlice %s/%s: %w", slice.Namespace, slice.Name, err)
			}
			provider = ns.Labels[consts.RemoteClusterIDLabel]
		}
		if provider == "" {
			return false, fmt.Errorf("ResourceSlice %s/%s names no provider: set spec.providerClusterID, its label %s, or make its namespace a tenant namespace (label %s)",
				slice.Namespace, slice.Name, consts.RemoteClusterIDLabel, consts.RemoteClusterIDLabel)
		}
		id := corev1beta1.ClusterID(provider)
		slice.Spec.ProviderClusterID = &id
	}
	if len(slice.Spec.CSR) == 0 {
		if slice.Spec.CSR, err = key.ResourceSliceCSR(slice.Name, local); err != nil {
			return false, fmt.Errorf("the certificate request of ResourceSlice %s/%s: %w", slice.Namespace, slice.Name, err)
		}
	}
	if err := r.Client.Patch(ctx, slice, client.MergeFrom(before)); err != nil {
		return false, fmt.Errorf("filling the provider and certificate request of ResourceSlice %s/%s: %w", slice.Namespace, slice.Name, err)
	}
	return true, nil
}

// SetupWithManager watches this cluster's own slices and the Identities made from them.
func (r *SliceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	own := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[consts.ReplicationLabel] == "true" })
	err := ctrl.NewControllerManagedBy(mgr).Named("resourceslice-identity").
		For(&authv1beta1.ResourceSlice{}, builder.WithPredicates(own)).
		Owns(&authv1beta1.Identity{}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the ResourceSlice identity controller: %w", err)
	}
	return nil
}
