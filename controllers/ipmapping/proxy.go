package ipmapping

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// ProxyReconciler keeps the IP of the API-server proxy in line with the proxy's Service.
type ProxyReconciler struct {
	// Client reads and writes the cluster.
	Client client.Client
	// LiqoNamespace holds the proxy's IP, where upstream's tools look for it.
	LiqoNamespace string
	// ServiceNamespace holds the proxy's Service ("": LiqoNamespace): the chart's release
	// namespace, which may be another.
	ServiceNamespace string
}

// serviceNamespace is where the proxy's Service is.
func (r *ProxyReconciler) serviceNamespace() string {
	if r.ServiceNamespace == "" {
		return r.LiqoNamespace
	}
	return r.ServiceNamespace
}

// SetupWithManager registers the reconciler on the Liqo namespace's proxy Services and the IP
// it writes, all mapped to one request.
func (r *ProxyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	only := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: r.key()}}
	})
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.LiqoNamespace })
	inServiceNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.serviceNamespace() })
	err := ctrl.NewControllerManagedBy(mgr).Named("ipmapping-apiserverproxy").
		Watches(&corev1.Service{}, only, builder.WithPredicates(inServiceNamespace, predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[consts.AppNameLabel] == consts.APIServerProxyApp
		}))).
		Watches(&ipamv1alpha1.IP{}, only, builder.WithPredicates(inNamespace, predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == consts.APIServerProxyIP
		}))).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the API-server proxy IP controller: %w", err)
	}
	return nil
}

// key is the proxy IP's name.
func (r *ProxyReconciler) key() client.ObjectKey {
	return client.ObjectKey{Namespace: r.LiqoNamespace, Name: consts.APIServerProxyIP}
}

// Reconcile makes the IP api-server-proxy hold the proxy Service's cluster IP: created when the
// Service appears, made again when its cluster IP changes (spec.ip cannot), deleted when the
// Service goes. Several proxy Services leave the IP as it is and say so.
func (r *ProxyReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	svcs := &corev1.ServiceList{}
	if err := r.Client.List(ctx, svcs, client.InNamespace(r.serviceNamespace()),
		client.MatchingLabels{consts.AppNameLabel: consts.APIServerProxyApp}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the API-server proxy Services in %s: %w", r.serviceNamespace(), err)
	}
	var clusterIP string
	switch n := len(svcs.Items); {
	case n > 1:
		return reconcile.Result{}, fmt.Errorf("%d Services in %s are labelled %s=%s; keep one, the API-server proxy's",
			n, r.serviceNamespace(), consts.AppNameLabel, consts.APIServerProxyApp)
	case n == 1:
		clusterIP = svcs.Items[0].Spec.ClusterIP
		if clusterIP == corev1.ClusterIPNone {
			clusterIP = ""
		}
	}
	ip := &ipamv1alpha1.IP{}
	err := r.Client.Get(ctx, r.key(), ip)
	switch {
	case apierrors.IsNotFound(err):
		ip = nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("reading IP %s: %w", r.key(), err)
	}
	if ip != nil && ip.DeletionTimestamp == nil && (clusterIP == "" || string(ip.Spec.IP) != clusterIP) {
		if err := r.Client.Delete(ctx, ip); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting IP %s (the proxy's cluster IP is now %q): %w", r.key(), clusterIP, err)
		}
		log.FromContext(ctx).Info("removed the API-server proxy's IP", "ip", r.key(), "was", ip.Spec.IP, "clusterIP", clusterIP)
		ip = nil
	}
	if clusterIP == "" || ip != nil {
		return reconcile.Result{}, nil
	}
	ip = &ipamv1alpha1.IP{ObjectMeta: metav1.ObjectMeta{Namespace: r.LiqoNamespace, Name: consts.APIServerProxyIP,
		Labels:      map[string]string{consts.IPTypeLabel: consts.APIServerProxyIP, consts.ManagedByLabel: consts.ManagedByControllerManager},
		Annotations: map[string]string{consts.PreinstalledAnnotation: "true"}},
		Spec: ipamv1alpha1.IPSpec{IP: netv1beta1.IP(clusterIP)}}
	if err := r.Client.Create(ctx, ip); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return reconcile.Result{RequeueAfter: time.Second}, nil // the old one is still going
		}
		return reconcile.Result{}, fmt.Errorf("creating IP %s for the proxy's cluster IP %s: %w", r.key(), clusterIP, err)
	}
	log.FromContext(ctx).Info("recorded the API-server proxy's IP", "ip", r.key(), "clusterIP", clusterIP)
	return reconcile.Result{}, nil
}
