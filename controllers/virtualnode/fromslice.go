// Package virtualnode turns the consumer's accepted ResourceSlices into VirtualNodes (capacity =
// the grant; node labels and the offloading patch's node selector = the slice's) and runs each
// VirtualNode's Node through a vnode.Runner; deleting a slice deletes its VirtualNode, which
// removes the Node. A slice of any class makes a virtual node once accepted (by whichever
// controller decides its class); a cordoned slice's Node is unschedulable (syncCordon).
package virtualnode

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// NameFor is the VirtualNode (and Node) of a slice (consts.VirtualNodeName).
func NameFor(slice *authv1beta1.ResourceSlice) string {
	return consts.VirtualNodeName(string(*slice.Spec.ProviderClusterID), slice.Name)
}

// SliceReconciler keeps one VirtualNode per accepted slice.
type SliceReconciler struct {
	// Client reads and writes the consumer cluster.
	Client client.Client
}

// Reconcile creates, updates or deletes the VirtualNode of one slice.
func (r *SliceReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	slice := &authv1beta1.ResourceSlice{}
	if err := r.Client.Get(ctx, req.NamespacedName, slice); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if slice.Spec.ProviderClusterID == nil || slice.Labels[consts.ReplicationLabel] != "true" {
		return reconcile.Result{}, nil // not a consumer's slice
	}
	vn := &offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: slice.Namespace, Name: NameFor(slice)}}
	if slice.DeletionTimestamp != nil || !accepted(slice) || slice.Annotations[consts.CreateVirtualNodeAnnotation] == "false" {
		err := r.Client.Delete(ctx, vn)
		if err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("removing the virtual node of %s: %w", req, err)
		}
		return reconcile.Result{}, nil
	}
	secret, err := identitySecret(ctx, r.Client, slice)
	if err != nil || secret == "" {
		return reconcile.Result{}, err
	}
	_, err = controllerutil.CreateOrUpdate(ctx, r.Client, vn, func() error {
		if vn.Labels == nil {
			vn.Labels = map[string]string{}
		}
		vn.Labels[consts.RemoteClusterIDLabel] = string(*slice.Spec.ProviderClusterID)
		vn.Labels[consts.ResourceSliceNameLabel] = slice.Name
		vn.Spec.ClusterID = *slice.Spec.ProviderClusterID
		vn.Spec.CreateNode = ptr.To(true)
		vn.Spec.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: secret}
		vn.Spec.ResourceQuota.Hard = slice.Status.Resources.DeepCopy()
		vn.Spec.Labels = slice.Status.NodeLabels
		// As upstream: the provider's node selector for the slice's pods becomes the offloading
		// patch's (the rest of the patch is left as it is).
		if len(slice.Status.NodeSelector) > 0 {
			if vn.Spec.OffloadingPatch == nil {
				vn.Spec.OffloadingPatch = &offv1beta1.OffloadingPatch{}
			}
			vn.Spec.OffloadingPatch.NodeSelector = maps.Clone(slice.Status.NodeSelector)
		}
		return controllerutil.SetControllerReference(slice, vn, r.Client.Scheme())
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("writing the virtual node of %s: %w", req, err)
	}
	return reconcile.Result{}, r.syncCordon(ctx, slice, vn.Name)
}

func accepted(s *authv1beta1.ResourceSlice) bool {
	n := 0
	for _, c := range s.Status.Conditions {
		if c.Status == authv1beta1.ResourceSliceConditionAccepted {
			n++
		}
	}
	return n == 2 && len(s.Status.Resources) > 0
}

// identitySecret is the name of the control-plane identity Secret of the slice's provider, in
// the slice's namespace; "" when there is none yet.
func identitySecret(ctx context.Context, c client.Client, slice *authv1beta1.ResourceSlice) (string, error) {
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.InNamespace(slice.Namespace), client.MatchingLabels{
		consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: string(*slice.Spec.ProviderClusterID)}); err != nil {
		return "", fmt.Errorf("listing identities in %s: %w", slice.Namespace, err)
	}
	if len(secrets.Items) == 0 {
		return "", nil
	}
	return secrets.Items[0].Name, nil
}

// SetupWithManager watches slices, the VirtualNodes they own and the virtual Nodes (created,
// or made (un)schedulable: see syncCordon).
func (r *SliceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).Named("slicevirtualnode").
		For(&authv1beta1.ResourceSlice{}).
		Owns(&offv1beta1.VirtualNode{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.sliceOfNode), builder.WithPredicates(cordonChanges)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the slice virtual-node controller: %w", err)
	}
	return nil
}
