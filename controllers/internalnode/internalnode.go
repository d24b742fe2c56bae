// Package internalnode keeps one networking.liqo.io InternalNode per real node of the cluster
// (issue 32, upstream Liqo v1.2's node controller): named after the Node, with the name of the
// tunnel interface every gateway makes towards the node and the node's address on the internal
// network (controllers/fabricipam). Virtual nodes (label liqo.io/type=virtual-node) have none;
// an InternalNode whose Node is gone, or became virtual, is deleted and its address released.
package internalnode

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/fabricipam"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/cached"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// Reconciler makes a Node's InternalNode.
type Reconciler struct {
	client.Client
	// IPAM allocates the nodes' internal addresses.
	IPAM *fabricipam.Allocator
}

// +kubebuilder:rbac:groups=networking.liqo.io,resources=internalnodes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile brings the InternalNode named req.Name in line with the Node of that name.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	err := r.Get(ctx, req.NamespacedName, node)
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("reading Node %s: %w", req.Name, err)
	}
	if apierrors.IsNotFound(err) || !node.DeletionTimestamp.IsZero() || node.Labels[consts.TypeLabel] == consts.VirtualNodeType {
		// Through the cache: a virtual node's every update comes here.
		in := &netv1beta1.InternalNode{ObjectMeta: metav1.ObjectMeta{Name: req.Name}}
		if _, err := cached.DeleteIfPresent(ctx, r.Client, in); err != nil {
			return ctrl.Result{}, fmt.Errorf("InternalNode of the gone or virtual node %s: %w", req.Name, err)
		}
		r.IPAM.Release(fabricipam.NodeKey(req.Name))
		return ctrl.Result{}, nil
	}
	in := &netv1beta1.InternalNode{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
	if _, err := controllerutil.CreateOrPatch(ctx, r.Client, in, func() error {
		name, err := fabricipam.InterfaceName(in.Spec.Interface.Gateway.Name, r.interfaceTaken(ctx, node.Name))
		if err != nil {
			return fmt.Errorf("naming the gateways' interface to node %s: %w", node.Name, err)
		}
		ip, err := r.IPAM.IP(ctx, fabricipam.NodeKey(node.Name))
		if err != nil {
			return err
		}
		forge.MutateInternalNode(in, name, ip.String())
		return controllerutil.SetOwnerReference(node, in, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing InternalNode %s: %w", node.Name, err)
	}
	return ctrl.Result{}, nil
}

// interfaceTaken says whether another InternalNode than self's has a gateway interface name.
func (r *Reconciler) interfaceTaken(ctx context.Context, self string) func(string) bool {
	return func(name string) bool {
		var list netv1beta1.InternalNodeList
		if err := r.List(ctx, &list); err != nil {
			return true
		}
		for i := range list.Items {
			if list.Items[i].Name != self && list.Items[i].Spec.Interface.Gateway.Name == name {
				return true
			}
		}
		return false
	}
}

// SetupWithManager registers the reconciler: Nodes, and InternalNodes by their name (so that
// one left without its Node, after the manager was down, is deleted at start).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	byName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("internalnode").
		For(&corev1.Node{}).
		Watches(&netv1beta1.InternalNode{}, byName).
		Complete(r); err != nil {
		return fmt.Errorf("setting up the InternalNode controller: %w", err)
	}
	return nil
}
