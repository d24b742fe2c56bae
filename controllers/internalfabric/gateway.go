// Package internalfabric makes the network fabric's objects of the gateways (issue 32, upstream
// Liqo v1.2's server, client and internal-fabric controllers): GatewayReconciler makes one
// networking.liqo.io InternalFabric per GatewayServer or GatewayClient, and TunnelReconciler one
// GeneveTunnel per (InternalFabric, InternalNode) with the nodes' routes to the gateway.
package internalfabric

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// waitRetry is how soon a gateway whose internal endpoint or peer CIDRs are not known yet is
// looked at again (its status and its Configuration's are watched too; this is a backstop).
const waitRetry = 10 * time.Second

// Gateway is what GatewayReconciler reads of one kind of gateway.
type Gateway[T client.Object] struct {
	// Kind names the kind ("GatewayServer") in messages and names the controller.
	Kind string
	// New returns an empty T, NewList an empty list of them.
	New     func() T
	NewList func() client.ObjectList
	// MTU is the gateway's tunnel MTU.
	MTU func(T) int
	// Internal is the gateway's internal endpoint (its pod's address), nil until known.
	Internal func(T) *netv1beta1.InternalGatewayEndpoint
}

// ServerKind reads GatewayServers.
var ServerKind = Gateway[*netv1beta1.GatewayServer]{Kind: "GatewayServer",
	New:     func() *netv1beta1.GatewayServer { return &netv1beta1.GatewayServer{} },
	NewList: func() client.ObjectList { return &netv1beta1.GatewayServerList{} },
	MTU:     func(g *netv1beta1.GatewayServer) int { return g.Spec.MTU },
	Internal: func(g *netv1beta1.GatewayServer) *netv1beta1.InternalGatewayEndpoint {
		return g.Status.InternalEndpoint
	}}

// ClientKind reads GatewayClients.
var ClientKind = Gateway[*netv1beta1.GatewayClient]{Kind: "GatewayClient",
	New:     func() *netv1beta1.GatewayClient { return &netv1beta1.GatewayClient{} },
	NewList: func() client.ObjectList { return &netv1beta1.GatewayClientList{} },
	MTU:     func(g *netv1beta1.GatewayClient) int { return g.Spec.MTU },
	Internal: func(g *netv1beta1.GatewayClient) *netv1beta1.InternalGatewayEndpoint {
		return g.Status.InternalEndpoint
	}}

// GatewayReconciler makes the InternalFabric of each gateway of kind T: in the gateway's
// namespace, named after the peer (label liqo.io/remote-cluster-id), controlled by the gateway;
// with the gateway's MTU and pod address, the peer's pod and external CIDRs as this cluster sees
// them (its Configuration's status.remote), a node interface name and an internal address.
type GatewayReconciler[T client.Object] struct {
	client.Client
	// Gateway reads the kind.
	Gateway Gateway[T]
	// IPAM allocates the gateways' internal addresses.
	IPAM *fabricipam.Allocator
}

// +kubebuilder:rbac:groups=networking.liqo.io,resources=gatewayservers;gatewayclients;configurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.liqo.io,resources=internalfabrics,verbs=get;list;watch;create;update;patch;delete

// Reconcile brings the InternalFabric of the gateway req in line with it.
func (r *GatewayReconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gw := r.Gateway.New()
	if err := r.Get(ctx, req.NamespacedName, gw); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("reading %s %s: %w", r.Gateway.Kind, req, err)
	} else if err != nil || !gw.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, r.deleteFabrics(ctx, req)
	}
	remote := gw.GetLabels()[consts.RemoteClusterIDLabel]
	if remote == "" {
		return ctrl.Result{}, nil // not a peering's gateway: nothing the fabric can route
	}
	internal := r.Gateway.Internal(gw)
	if internal == nil || internal.IP == nil || *internal.IP == "" {
		return ctrl.Result{RequeueAfter: waitRetry}, nil
	}
	cidrs, err := r.remoteCIDRs(ctx, remote)
	if err != nil || cidrs == nil {
		return ctrl.Result{RequeueAfter: waitRetry}, err
	}
	f := &netv1beta1.InternalFabric{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: forge.InternalFabricName(remote)}}
	if _, err := controllerutil.CreateOrPatch(ctx, r.Client, f, func() error {
		name, err := fabricipam.InterfaceName(f.Spec.Interface.Node.Name, r.interfaceTaken(ctx, f))
		if err != nil {
			return fmt.Errorf("naming the nodes' interface to %s %s: %w", r.Gateway.Kind, req, err)
		}
		ip, err := r.IPAM.IP(ctx, fabricipam.FabricKey(f.Namespace, f.Name))
		if err != nil {
			return err
		}
		forge.MutateInternalFabric(f, remote, forge.InternalFabricOptions{MTU: r.Gateway.MTU(gw), GatewayIP: string(*internal.IP),
			NodeInterface: name, GatewayInternalIP: ip.String(), RemoteCIDRs: cidrs})
		return controllerutil.SetControllerReference(gw, f, r.Scheme())
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing InternalFabric %s/%s of %s %s: %w", f.Namespace, f.Name, r.Gateway.Kind, req, err)
	}
	return ctrl.Result{}, nil
}

// remoteCIDRs are the peer's pod and external CIDRs as this cluster sees them, from its
// Configuration's status; nil while no Configuration has them.
func (r *GatewayReconciler[T]) remoteCIDRs(ctx context.Context, remote string) ([]netv1beta1.CIDR, error) {
	var list netv1beta1.ConfigurationList
	if err := r.List(ctx, &list, client.MatchingLabels{consts.RemoteClusterIDLabel: remote}); err != nil {
		return nil, fmt.Errorf("listing the Configurations of peer %s: %w", remote, err)
	}
	for i := range list.Items {
		if st := list.Items[i].Status.Remote; st != nil && len(st.CIDR.Pod) > 0 {
			return slices.Concat(st.CIDR.Pod, st.CIDR.External), nil
		}
	}
	return nil, nil
}

// interfaceTaken says whether another InternalFabric than self has a node interface name.
func (r *GatewayReconciler[T]) interfaceTaken(ctx context.Context, self *netv1beta1.InternalFabric) func(string) bool {
	return func(name string) bool {
		var list netv1beta1.InternalFabricList
		if err := r.List(ctx, &list); err != nil {
			return true
		}
		for i := range list.Items {
			o := &list.Items[i]
			if (o.Namespace != self.Namespace || o.Name != self.Name) && o.Spec.Interface.Node.Name == name {
				return true
			}
		}
		return false
	}
}

// deleteFabrics deletes the InternalFabrics the gone gateway req controlled (the garbage
// collector would, later; the nodes should stop routing to it now) and releases their addresses.
func (r *GatewayReconciler[T]) deleteFabrics(ctx context.Context, req ctrl.Request) error {
	var list netv1beta1.InternalFabricList
	if err := r.List(ctx, &list, client.InNamespace(req.Namespace)); err != nil {
		return fmt.Errorf("listing the InternalFabrics of %s %s: %w", r.Gateway.Kind, req, err)
	}
	var errs []error
	for i := range list.Items {
		f := &list.Items[i]
		if owner := metav1.GetControllerOf(f); owner == nil || owner.Kind != r.Gateway.Kind || owner.Name != req.Name {
			continue
		}
		if err := r.Delete(ctx, f); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting InternalFabric %s/%s of the gone %s %s: %w", f.Namespace, f.Name, r.Gateway.Kind, req, err))
		}
	}
	return errors.Join(errs...)
}

// SetupWithManager registers the reconciler: gateways of kind T, the InternalFabrics they
// control, and Configurations (whose status brings the peer's CIDRs) by their peer's gateways.
func (r *GatewayReconciler[T]) SetupWithManager(mgr ctrl.Manager) error {
	byPeer := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return r.gatewaysOfPeer(ctx, o.GetLabels()[consts.RemoteClusterIDLabel])
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("internalfabric-"+strings.ToLower(r.Gateway.Kind)).
		For(r.Gateway.New()).
		Owns(&netv1beta1.InternalFabric{}).
		Watches(&netv1beta1.Configuration{}, byPeer).
		Complete(r); err != nil {
		return fmt.Errorf("setting up the InternalFabric controller of %ss: %w", r.Gateway.Kind, err)
	}
	return nil
}

// gatewaysOfPeer are the requests of the gateways of kind T for the peer remote.
func (r *GatewayReconciler[T]) gatewaysOfPeer(ctx context.Context, remote string) []reconcile.Request {
	if remote == "" {
		return nil
	}
	list := r.Gateway.NewList()
	if err := r.List(ctx, list, client.MatchingLabels{consts.RemoteClusterIDLabel: remote}); err != nil {
		return nil
	}
	var out []reconcile.Request
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
		return nil
	})
	return out
}
