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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
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
	secret, err := peering.ControlPlaneSecret(ctx, r.Client, slice.Namespace, *slice.Spec.ProviderClusterID)
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
	if err := r.syncProviderNodes(ctx, slice); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.syncCordon(ctx, slice, vn.Name)
}

// syncProviderNodes puts what the provider says of its nodes for the slice (none Ready:
// consts.ProviderNodesNotReadyAnnotation, which replication brings back from the provider's
// copy) on every VirtualNode made from the slice (its own, and those of liqo_virtual_node),
// whose virtual kubelets then report the Node NotReady; and removes it when the provider has
// a Ready node again.
func (r *SliceReconciler) syncProviderNodes(ctx context.Context, slice *authv1beta1.ResourceSlice) error {
	want := slice.Annotations[consts.ProviderNodesNotReadyAnnotation]
	vns := &offv1beta1.VirtualNodeList{}
	if err := r.Client.List(ctx, vns, client.InNamespace(slice.Namespace), client.MatchingLabels{consts.ResourceSliceNameLabel: slice.Name}); err != nil {
		return fmt.Errorf("listing the virtual nodes of ResourceSlice %s/%s: %w", slice.Namespace, slice.Name, err)
	}
	for i := range vns.Items {
		vn := &vns.Items[i]
		if vn.Annotations[consts.ProviderNodesNotReadyAnnotation] == want {
			continue
		}
		before := vn.DeepCopy()
		if want == "" {
			delete(vn.Annotations, consts.ProviderNodesNotReadyAnnotation)
		} else {
			if vn.Annotations == nil {
				vn.Annotations = map[string]string{}
			}
			vn.Annotations[consts.ProviderNodesNotReadyAnnotation] = want
		}
		if err := r.Client.Patch(ctx, vn, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("telling virtual node %s/%s that its provider has no Ready node (%q): %w", vn.Namespace, vn.Name, want, err)
		}
		log.FromContext(ctx).Info("virtual node follows its provider's nodes", "virtualNode", client.ObjectKeyFromObject(vn), "noReadyNode", want)
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

// SetupWithManager watches slices, the VirtualNodes made from them and the virtual Nodes
// (created, or made (un)schedulable: see syncCordon).
func (r *SliceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).Named("slicevirtualnode").
		For(&authv1beta1.ResourceSlice{}).
		// Its VirtualNodes, and those of liqo_virtual_node, made from a slice but not owned by
		// it: all labelled with the slice's name.
		Watches(&offv1beta1.VirtualNode{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if name := o.GetLabels()[consts.ResourceSliceNameLabel]; name != "" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
			}
			return nil
		})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.sliceOfNode), builder.WithPredicates(cordonChanges)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the slice virtual-node controller: %w", err)
	}
	return nil
}
