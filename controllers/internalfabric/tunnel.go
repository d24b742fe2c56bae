package internalfabric

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/fabricipam"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// TunnelReconciler makes, for each InternalFabric, one GeneveTunnel per InternalNode (named
// "<fabric>-<node>" in the fabric's namespace, labelled with both names, with its own ID from
// controllers/fabricipam) and the RouteConfiguration "<fabric>-node-gw" every node's fabric
// agent applies (the remote CIDRs via the gateway's internal address). A tunnel whose
// InternalNode is gone is deleted; an InternalFabric being deleted waits (finalizer) until its
// tunnels and node routes are gone, then its tunnel IDs and internal address are released.
type TunnelReconciler struct {
	client.Client
	// IPAM allocates the tunnels' IDs.
	IPAM *fabricipam.Allocator
	// RulePriority is the priority of the nodes' policy rules (0: the agent's own).
	RulePriority int
}

// +kubebuilder:rbac:groups=networking.liqo.io,resources=internalfabrics,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=networking.liqo.io,resources=internalfabrics/finalizers,verbs=update
// +kubebuilder:rbac:groups=networking.liqo.io,resources=internalnodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.liqo.io,resources=genevetunnels;routeconfigurations,verbs=get;list;watch;create;update;patch;delete

// Reconcile brings the tunnels and node routes of the InternalFabric req in line with it.
func (r *TunnelReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	f := &netv1beta1.InternalFabric{}
	if err := r.Get(ctx, req.NamespacedName, f); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !f.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, f)
	}
	if controllerutil.AddFinalizer(f, consts.InternalFabricTunnelsFinalizer) {
		if err := r.Update(ctx, f); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the tunnels finalizer to InternalFabric %s: %w", req, err)
		}
	}
	if f.Spec.Interface.Node.Name == "" || f.Spec.Interface.Gateway.IP == "" {
		return ctrl.Result{}, nil // not allocated yet: its writer updates it
	}
	rc := &netv1beta1.RouteConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: forge.FabricRouteConfigurationName(f)}}
	if _, err := controllerutil.CreateOrPatch(ctx, r.Client, rc, func() error {
		forge.MutateFabricRouteConfiguration(rc, f, r.RulePriority)
		return controllerutil.SetControllerReference(f, rc, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing RouteConfiguration %s/%s of InternalFabric %s: %w", rc.Namespace, rc.Name, req, err)
	}
	var nodes netv1beta1.InternalNodeList
	if err := r.List(ctx, &nodes); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing InternalNodes: %w", err)
	}
	live := map[string]bool{}
	for i := range nodes.Items {
		in := &nodes.Items[i]
		if !in.DeletionTimestamp.IsZero() {
			continue
		}
		live[in.Name] = true
		if err := r.ensureTunnel(ctx, f, in); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, r.deleteTunnels(ctx, f, func(t *netv1beta1.GeneveTunnel) bool { return !live[t.Labels[consts.InternalNodeNameLabel]] })
}

// ensureTunnel writes the GeneveTunnel of f and in.
func (r *TunnelReconciler) ensureTunnel(ctx context.Context, f *netv1beta1.InternalFabric, in *netv1beta1.InternalNode) error {
	t := &netv1beta1.GeneveTunnel{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: forge.GeneveTunnelName(f.Name, in.Name)}}
	if _, err := controllerutil.CreateOrPatch(ctx, r.Client, t, func() error {
		id, err := r.IPAM.TunnelID(ctx, fabricipam.TunnelKey(t.Namespace, t.Name))
		if err != nil {
			return err
		}
		forge.MutateGeneveTunnel(t, f, in, id)
		return controllerutil.SetControllerReference(f, t, r.Scheme())
	}); err != nil {
		return fmt.Errorf("writing GeneveTunnel %s/%s: %w", t.Namespace, t.Name, err)
	}
	return nil
}

// deleteTunnels deletes the GeneveTunnels of f that gone says are gone, releasing their IDs.
func (r *TunnelReconciler) deleteTunnels(ctx context.Context, f *netv1beta1.InternalFabric, gone func(*netv1beta1.GeneveTunnel) bool) error {
	var list netv1beta1.GeneveTunnelList
	if err := r.List(ctx, &list, client.InNamespace(f.Namespace), client.MatchingLabels{consts.InternalFabricNameLabel: f.Name}); err != nil {
		return fmt.Errorf("listing the GeneveTunnels of InternalFabric %s/%s: %w", f.Namespace, f.Name, err)
	}
	var errs []error
	for i := range list.Items {
		t := &list.Items[i]
		if !gone(t) {
			continue
		}
		if err := r.Delete(ctx, t); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting GeneveTunnel %s/%s: %w", t.Namespace, t.Name, err))
			continue
		}
		r.IPAM.Release(fabricipam.TunnelKey(t.Namespace, t.Name))
	}
	return errors.Join(errs...)
}

// finalize deletes the tunnels of the InternalFabric f being deleted, releases its address and
// lets it go.
func (r *TunnelReconciler) finalize(ctx context.Context, f *netv1beta1.InternalFabric) error {
	if !controllerutil.ContainsFinalizer(f, consts.InternalFabricTunnelsFinalizer) {
		return nil
	}
	if err := r.deleteTunnels(ctx, f, func(*netv1beta1.GeneveTunnel) bool { return true }); err != nil {
		return err
	}
	// The nodes stop routing to the gateway now, not when the garbage collector gets to it.
	rc := &netv1beta1.RouteConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: forge.FabricRouteConfigurationName(f)}}
	if err := r.Delete(ctx, rc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting RouteConfiguration %s/%s of InternalFabric %s/%s: %w", rc.Namespace, rc.Name, f.Namespace, f.Name, err)
	}
	r.IPAM.Release(fabricipam.FabricKey(f.Namespace, f.Name))
	controllerutil.RemoveFinalizer(f, consts.InternalFabricTunnelsFinalizer)
	if err := r.Update(ctx, f); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the tunnels finalizer of InternalFabric %s/%s: %w", f.Namespace, f.Name, err)
	}
	return nil
}

// SetupWithManager registers the reconciler: InternalFabrics, what they control, and
// InternalNodes (each change of which concerns every InternalFabric).
func (r *TunnelReconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list netv1beta1.InternalFabricList
		if err := r.List(ctx, &list); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return out
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("internalfabric-tunnels").
		For(&netv1beta1.InternalFabric{}).
		Owns(&netv1beta1.GeneveTunnel{}).
		Owns(&netv1beta1.RouteConfiguration{}).
		Watches(&netv1beta1.InternalNode{}, all).
		Complete(r); err != nil {
		return fmt.Errorf("setting up the GeneveTunnel controller: %w", err)
	}
	return nil
}
