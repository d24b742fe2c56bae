package nodeagent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/gateway/fabric"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// DefaultResync is how often the agent re-applies the node's fabric without a change of the
// objects, repairing what someone else changed in the kernel.
const DefaultResync = 30 * time.Second

// Reconciler keeps one node's fabric in line with the cluster's fabric objects. Every request
// rebuilds and applies the node's whole Desired.
type Reconciler struct {
	client.Client
	// NodeName is the node the agent runs on (its InternalNode and Node have this name).
	NodeName string
	// LiqoNamespace holds the gateways' RouteConfigurations "<node>-gw-node" (empty: the default).
	LiqoNamespace string
	// Dataplane applies the Desired.
	Dataplane *fabric.Dataplane
	// InNetns runs fn in the node's network namespace; nil runs it in the calling thread's
	// (the agent's host network). Tests set it to run several "nodes" in one process.
	InNetns func(fn func() error) error
	// Recorder records the encapsulation as an Event on the InternalNode; nil: none.
	Recorder events.EventRecorder
	// Resync is how often to re-apply without changes (0: DefaultResync).
	Resync time.Duration
	// Log receives what the agent does.
	Log logr.Logger

	mu       sync.Mutex
	reported bool // the encapsulation's Event is recorded
}

// +kubebuilder:rbac:groups=networking.liqo.io,resources=internalnodes;internalfabrics;genevetunnels;firewallconfigurations;routeconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.liqo.io,resources=internalnodes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// in runs fn in the node's network namespace.
func (r *Reconciler) in(fn func() error) error {
	if r.InNetns == nil {
		return fn()
	}
	return r.InNetns(fn)
}

// Reconcile builds the node's Desired from the objects, applies it, and reports the node's
// source address in its InternalNode's status.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	resync := r.Resync
	if resync == 0 {
		resync = DefaultResync
	}
	v, err := r.view(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	var want fabric.Desired
	var local map[string]bool
	if err := r.in(func() (err error) {
		if local, err = localAddrs(); err != nil {
			return err
		}
		want = v.desired(r.Log, local)
		if _, err := r.Dataplane.Apply(ctx, want); err != nil {
			return fmt.Errorf("applying the fabric of node %s: %w", r.NodeName, err)
		}
		return looseRPFilter(v.gatewayLinks)
	}); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeStatus(ctx, v, local); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: resync}, nil
}

// Cleanup removes everything the fabric made in the node's network namespace.
func (r *Reconciler) Cleanup(ctx context.Context) error {
	if err := r.in(func() error { _, err := r.Dataplane.RemoveAll(ctx); return err }); err != nil {
		return fmt.Errorf("removing the fabric of node %s: %w", r.NodeName, err)
	}
	r.Log.Info("fabric removed", "node", r.NodeName)
	return nil
}

// SetupWithManager registers the reconciler: every change of a fabric object or Node leads to
// the one request of this node.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.NodeName == "" {
		return fmt.Errorf("the fabric agent needs its node's name (--node-name, or NODE_NAME from the downward API)")
	}
	me := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: r.NodeName}}}
	})
	b := ctrl.NewControllerManagedBy(mgr).Named("fabricagent").
		Watches(&netv1beta1.InternalNode{}, me)
	for _, o := range []client.Object{&netv1beta1.InternalFabric{}, &netv1beta1.GeneveTunnel{},
		&netv1beta1.FirewallConfiguration{}, &netv1beta1.RouteConfiguration{}} {
		b = b.Watches(o, me)
	}
	// A Node matters for its pod CIDRs only, not for its status's updates.
	b = b.Watches(&corev1.Node{}, me, builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		return !ok1 || !ok2 || !slices.Equal(o.Spec.PodCIDRs, n.Spec.PodCIDRs)
	}}))
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("setting up the fabric agent of node %s: %w", r.NodeName, err)
	}
	return nil
}

// liqoNamespace is where the gateways' RouteConfigurations are.
func (r *Reconciler) liqoNamespace() string { return consts.LiqoNamespaceOr(r.LiqoNamespace) }
