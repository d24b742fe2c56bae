// Package virtualnode turns the consumer's accepted ResourceSlices into VirtualNodes (capacity =
// the grant; node labels and the offloading patch's node selector = the slice's) and runs each
// VirtualNode's Node through a vnode.Runner; a VirtualNode runs with the slice's own Identity once
// the provider signed the slice's certificate, as upstream's do (identities.VirtualNodeSecret, the
// control-plane identity until then); deleting a slice deletes its VirtualNode, which
// removes the Node. A slice of any class makes a virtual node once accepted (by whichever
// controller decides its class); a cordoned slice's Node is unschedulable (syncCordon).
package virtualnode

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/cached"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/identities"
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
		// Through the cache: an unaccepted slice's every update comes here.
		if _, err := cached.DeleteIfPresent(ctx, r.Client, vn); err != nil {
			return reconcile.Result{}, fmt.Errorf("removing the virtual node of %s: %w", req, err)
		}
		return reconcile.Result{}, nil
	}
	// As upstream: the slice's own Identity once the provider signed its certificate (until
	// then, or for a provider that signs none, the control-plane identity).
	secret, err := identities.VirtualNodeSecret(ctx, r.Client, slice)
	if err != nil || secret == "" {
		return reconcile.Result{}, err
	}
	_, err = controllerutil.CreateOrUpdate(ctx, r.Client, vn, func() error {
		// As upstream: the provider's node selector for the slice's pods becomes the offloading
		// patch's (the rest of the patch is left as it is).
		patch := vn.Spec.OffloadingPatch
		if len(slice.Status.NodeSelector) > 0 {
			if patch == nil {
				patch = &offv1beta1.OffloadingPatch{}
			}
			patch.NodeSelector = maps.Clone(slice.Status.NodeSelector)
		}
		forge.MutateVirtualNode(vn, forge.VirtualNodeOptions{ProviderID: string(*slice.Spec.ProviderClusterID), ResourceSlice: slice.Name,
			KubeconfigSecret: secret, Resources: slice.Status.Resources, NodeLabels: slice.Status.NodeLabels, CreateNode: true,
			OffloadingPatch: patch})
		return controllerutil.SetControllerReference(slice, vn, r.Client.Scheme())
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("writing the virtual node of %s: %w", req, err)
	}
	if err := r.syncMadeFromSlice(ctx, slice, secret); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.syncCordon(ctx, slice, vn.Name)
}

// syncMadeFromSlice keeps every VirtualNode made from the slice (its own, and those of
// liqo_virtual_node) following the slice: what the provider says of its nodes (syncProviderNodes),
// and the kubeconfig Secret (syncSecret).
func (r *SliceReconciler) syncMadeFromSlice(ctx context.Context, slice *authv1beta1.ResourceSlice, secret string) error {
	vns := &offv1beta1.VirtualNodeList{}
	if err := r.Client.List(ctx, vns, client.InNamespace(slice.Namespace), client.MatchingLabels{consts.ResourceSliceNameLabel: slice.Name}); err != nil {
		return fmt.Errorf("listing the virtual nodes of ResourceSlice %s/%s: %w", slice.Namespace, slice.Name, err)
	}
	controlPlane := ""
	if secret != "" {
		var err error
		if controlPlane, err = identities.ControlPlaneSecret(ctx, r.Client, slice.Namespace, *slice.Spec.ProviderClusterID); err != nil {
			return err
		}
	}
	for i := range vns.Items {
		vn := &vns.Items[i]
		before := vn.DeepCopy()
		r.syncProviderNodes(ctx, slice, vn)
		syncSecret(vn, secret, controlPlane)
		if equality.Semantic.DeepEqual(before, vn) {
			continue
		}
		if err := r.Client.Patch(ctx, vn, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("virtual node %s/%s of ResourceSlice %s/%s: following the slice (provider's nodes, kubeconfigSecretRef): %w",
				vn.Namespace, vn.Name, slice.Namespace, slice.Name, err)
		}
	}
	return nil
}

// syncProviderNodes puts what the provider says of its nodes for the slice (none Ready:
// consts.ProviderNodesNotReadyAnnotation, which replication brings back from the provider's
// copy) on vn, whose virtual kubelet then reports the Node NotReady; and removes it when the
// provider has a Ready node again.
func (r *SliceReconciler) syncProviderNodes(ctx context.Context, slice *authv1beta1.ResourceSlice, vn *offv1beta1.VirtualNode) {
	want := slice.Annotations[consts.ProviderNodesNotReadyAnnotation]
	if vn.Annotations[consts.ProviderNodesNotReadyAnnotation] == want {
		return
	}
	if want == "" {
		delete(vn.Annotations, consts.ProviderNodesNotReadyAnnotation)
	} else {
		if vn.Annotations == nil {
			vn.Annotations = map[string]string{}
		}
		vn.Annotations[consts.ProviderNodesNotReadyAnnotation] = want
	}
	log.FromContext(ctx).Info("virtual node follows its provider's nodes", "virtualNode", client.ObjectKeyFromObject(vn), "noReadyNode", want)
}

// syncSecret moves vn, when it runs with the provider's control-plane Secret controlPlane (the
// default of liqo_virtual_node, or the slice's own virtual node before the slice was signed),
// to secret (identities.VirtualNodeSecret: the slice Identity's once it exists). A Secret its
// writer chose is kept. The virtual kubelet restarts its node with the new credentials.
func syncSecret(vn *offv1beta1.VirtualNode, secret, controlPlane string) {
	if secret == "" || controlPlane == "" || vn.Spec.KubeconfigSecretRef == nil || vn.Spec.KubeconfigSecretRef.Name != controlPlane {
		return
	}
	vn.Spec.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: secret}
}

// sliceOfLabel is the slice an object is labelled with (consts.ResourceSliceNameLabel), in its
// namespace.
func sliceOfLabel(_ context.Context, o client.Object) []reconcile.Request {
	if name := o.GetLabels()[consts.ResourceSliceNameLabel]; name != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
	}
	return nil
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

// SetupWithManager watches slices, the VirtualNodes and Identities made from them and the
// virtual Nodes (created, or made (un)schedulable: see syncCordon).
func (r *SliceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).Named("slicevirtualnode").
		For(&authv1beta1.ResourceSlice{}).
		// Its VirtualNodes, and those of liqo_virtual_node, made from a slice but not owned by
		// it: all labelled with the slice's name.
		Watches(&offv1beta1.VirtualNode{}, handler.EnqueueRequestsFromMapFunc(sliceOfLabel)).
		// The slices' Identities (upstream's label, ours and upstream's consumers alike): once one
		// names its kubeconfig Secret, the virtual nodes move to it.
		Watches(&authv1beta1.Identity{}, handler.EnqueueRequestsFromMapFunc(sliceOfLabel)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.sliceOfNode), builder.WithPredicates(cordonChanges)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the slice virtual-node controller: %w", err)
	}
	return nil
}
