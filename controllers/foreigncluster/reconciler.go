// Package foreigncluster keeps one ForeignCluster per remote cluster that local objects refer
// to (tenant namespaces, tenants, identities, resource slices, network objects, virtual nodes):
// it creates it when the first such object appears, keeps its status (role, tenant namespaces,
// per-module conditions) current, and deletes it when the last one goes.
package foreigncluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// managedByLabel marks the ForeignClusters this reconciler created (and may delete).
const (
	managedByLabel = consts.ManagedByLabel
	managedBy      = consts.ManagedByControllerManager
)

// Reconciler keeps ForeignClusters. The reconcile key's name is the remote cluster ID.
type Reconciler struct {
	// Client reads and writes the local cluster.
	Client client.Client
	// LocalClusterID is this cluster's ID: objects name it too (a slice names both its
	// consumer and its provider), and a cluster is not its own peer.
	LocalClusterID corev1beta1.ClusterID
}

// Reconcile brings the ForeignCluster of one remote cluster ID in line with the local objects.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	id := corev1beta1.ClusterID(req.Name)
	if id == r.LocalClusterID {
		return reconcile.Result{}, nil
	}
	o, err := observe(ctx, r.Client, id)
	if err != nil {
		return reconcile.Result{}, err
	}
	fc := &corev1beta1.ForeignCluster{}
	err = r.Client.Get(ctx, client.ObjectKey{Name: req.Name}, fc)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("reading ForeignCluster %s: %w", req.Name, err)
	}

	if o.empty() {
		if exists && fc.Labels[managedByLabel] == managedBy {
			if err := r.Client.Delete(ctx, fc); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting ForeignCluster %s: %w", req.Name, err)
			}
			log.FromContext(ctx).Info("peering gone, ForeignCluster deleted", "clusterID", id)
		}
		return reconcile.Result{}, nil
	}
	if !exists {
		fc = &corev1beta1.ForeignCluster{
			ObjectMeta: metav1.ObjectMeta{Name: req.Name, Labels: map[string]string{managedByLabel: managedBy, consts.RemoteClusterIDLabel: req.Name}},
			Spec:       corev1beta1.ForeignClusterSpec{ClusterID: id},
		}
		if err := r.Client.Create(ctx, fc); err != nil {
			return reconcile.Result{}, fmt.Errorf("creating ForeignCluster %s: %w", req.Name, err)
		}
		log.FromContext(ctx).Info("ForeignCluster created", "clusterID", id)
	}
	st := o.status(fc.Status, metav1.Now())
	st.ObservedGeneration = fc.Generation
	if equality.Semantic.DeepEqual(st, fc.Status) {
		return reconcile.Result{}, nil
	}
	fc.Status = st
	if err := r.Client.Status().Update(ctx, fc); err != nil {
		return reconcile.Result{}, fmt.Errorf("updating status of ForeignCluster %s: %w", req.Name, err)
	}
	return reconcile.Result{}, nil
}

// SetupWithManager watches ForeignClusters and every kind that refers to a remote cluster.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	byLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return key(o.GetLabels()[consts.RemoteClusterIDLabel])
	})
	// Objects whose spec names a cluster; the label too, for those whose spec does not.
	bySpec := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		out := key(o.GetLabels()[consts.RemoteClusterIDLabel])
		switch v := o.(type) {
		case *authv1beta1.Tenant:
			out = append(out, key(string(v.Spec.ClusterID))...)
		case *authv1beta1.Identity:
			out = append(out, key(string(v.Spec.ClusterID))...)
		case *authv1beta1.ResourceSlice:
			if v.Spec.ProviderClusterID != nil {
				out = append(out, key(string(*v.Spec.ProviderClusterID))...)
			}
			if v.Spec.ConsumerClusterID != nil {
				out = append(out, key(string(*v.Spec.ConsumerClusterID))...)
			}
		case *offv1beta1.VirtualNode:
			out = append(out, key(string(v.Spec.ClusterID))...)
		}
		return out
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("foreigncluster").
		For(&corev1beta1.ForeignCluster{}).
		Watches(&corev1.Namespace{}, byLabel).
		Watches(&corev1.Node{}, byLabel).
		Watches(&netv1beta1.Configuration{}, byLabel).
		Watches(&netv1beta1.GatewayServer{}, byLabel).
		Watches(&netv1beta1.GatewayClient{}, byLabel).
		Watches(&netv1beta1.Connection{}, byLabel).
		Watches(&authv1beta1.Tenant{}, bySpec).
		// A tenant's refusal depends on the nonce its signature is checked against.
		Watches(&corev1.Secret{}, byLabel, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == consts.NonceSecret
		}))).
		Watches(&authv1beta1.Identity{}, bySpec).
		Watches(&authv1beta1.ResourceSlice{}, bySpec).
		Watches(&offv1beta1.VirtualNode{}, bySpec).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the ForeignCluster controller: %w", err)
	}
	return nil
}

// key is the reconcile request of a remote cluster ID; none for an empty one.
func key(id string) []reconcile.Request {
	if id == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: id}}}
}
