// Package fabricroute keeps the gateways' routes back to the nodes (issue 32, upstream Liqo
// v1.2's internal-network route controller): for each InternalNode, the RouteConfiguration
// "<node>-gw-node" in the Liqo namespace, which every gateway applies: the node's internal
// address on the link of the gateway's tunnel interface to the node, and, for traffic coming
// from the peer, a /32 per pod of the node (not host-network ones) via that address. It is
// owned by the InternalNode and deleted with it.
package fabricroute

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// nodeNameField indexes Pods by spec.nodeName.
const nodeNameField = "spec.nodeName"

// Reconciler keeps an InternalNode's gateway routes.
type Reconciler struct {
	client.Client
	// LiqoNamespace is where the RouteConfigurations are.
	LiqoNamespace string
	// ExternalCIDR is this cluster's external CIDR: its first address is the nodes' source for
	// host-network and NodePort traffic towards the peers. Empty: no NodePort routing.
	ExternalCIDR string
}

// +kubebuilder:rbac:groups=networking.liqo.io,resources=internalnodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.liqo.io,resources=routeconfigurations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.liqo.io,resources=firewallconfigurations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// Reconcile brings the gateway routes of the InternalNode req.Name in line with its pods.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	in := &netv1beta1.InternalNode{}
	rc := &netv1beta1.RouteConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespaceOr(r.LiqoNamespace),
		Name: forge.GatewayNodeRouteConfigurationName(req.Name)}}
	if err := r.Get(ctx, req.NamespacedName, in); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("reading InternalNode %s: %w", req.Name, err)
	} else if err != nil || !in.DeletionTimestamp.IsZero() {
		if err := r.Delete(ctx, rc); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting RouteConfiguration %s/%s of the gone InternalNode %s: %w", rc.Namespace, rc.Name, req.Name, err)
		}
		return ctrl.Result{}, r.nodePort(ctx, req.Name, nil)
	}
	if in.Spec.Interface.Node.IP == "" || in.Spec.Interface.Gateway.Name == "" {
		return ctrl.Result{}, nil // not allocated yet: its writer updates it
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.MatchingFields{nodeNameField: in.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the pods of node %s: %w", in.Name, err)
	}
	var routed []forge.NodePod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.HostNetwork || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		routed = append(routed, forge.NodePod{Name: p.Name, Namespace: p.Namespace, UID: p.UID, IP: p.Status.PodIP})
	}
	if _, err := controllerutil.CreateOrPatch(ctx, r.Client, rc, func() error {
		forge.MutateGatewayNodeRouteConfiguration(rc, in, routed)
		return controllerutil.SetControllerReference(in, rc, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing RouteConfiguration %s/%s of InternalNode %s: %w", rc.Namespace, rc.Name, in.Name, err)
	}
	return ctrl.Result{}, r.nodePort(ctx, in.Name, in)
}

// SetupWithManager registers the reconciler: InternalNodes, their RouteConfigurations, and Pods
// by their node.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, nodeNameField, func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	byNode := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: p.Spec.NodeName}}}
		}
		return nil
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("fabricroute").
		For(&netv1beta1.InternalNode{}).
		Owns(&netv1beta1.RouteConfiguration{}).
		Watches(&corev1.Pod{}, byNode).
		Complete(r); err != nil {
		return fmt.Errorf("setting up the gateway node-route controller: %w", err)
	}
	return nil
}
