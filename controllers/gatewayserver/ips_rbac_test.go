package gatewayserver_test

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/gatewayserver"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestGatewayReadsIPsOfTheLiqoNamespace: a gateway's ServiceAccount may get, list and watch the
// ipam.liqo.io IPs of the Liqo namespace (here a non-default one, the reconciler's
// LiqoNamespace), and nothing more there: no IPs elsewhere, no writes, no other kind. The
// Deployment points the gateway at that namespace. Deleting the gateway removes its binding;
// another gateway's stays.
func TestGatewayReadsIPsOfTheLiqoNamespace(t *testing.T) {
	ctx := t.Context()
	env := plain.Env(t)
	cl := env.Cluster("a")
	c := cl.Client
	const liqoNS, tenant, other = "liqo-system", "liqo-tenant-ips", "liqo-tenant-other"
	for _, ns := range []string{liqoNS, tenant, other} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&gatewayserver.Reconciler{Client: mgr.GetClient(), LiqoNamespace: liqoNS}).SetupWithManager(mgr)
	})
	for _, ip := range []*ipamv1alpha1.IP{
		{ObjectMeta: metav1.ObjectMeta{Namespace: liqoNS, Name: "api-server-proxy"}, Spec: ipamv1alpha1.IPSpec{IP: "10.96.0.20"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "elsewhere"}, Spec: ipamv1alpha1.IPSpec{IP: "10.96.0.21"}},
	} {
		if err := c.Create(ctx, ip); err != nil {
			t.Fatal(err)
		}
	}
	newServer := func(ns, name string) *netv1beta1.GatewayServer {
		gw := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: netv1beta1.GatewayServerSpec{Endpoint: netv1beta1.Endpoint{Port: 51950, ServiceType: corev1.ServiceTypeClusterIP}}}
		if err := c.Create(ctx, gw); err != nil {
			t.Fatal(err)
		}
		return gw
	}
	gw, kept := newServer(tenant, "ips"), newServer(other, "ips")
	binding := func(gw client.Object) (*rbacv1.RoleBinding, error) {
		rb := &rbacv1.RoleBinding{}
		return rb, c.Get(ctx, client.ObjectKey{Namespace: liqoNS, Name: workload.IPsBindingName(gw)}, rb)
	}
	for _, g := range []client.Object{gw, kept} {
		testenv.EventuallyOK(t, "the gateway's RoleBinding in "+liqoNS, 15*time.Second, func() error {
			_, err := binding(g)
			return err
		})
	}
	rb, _ := binding(gw)
	if len(rb.OwnerReferences) != 1 || rb.OwnerReferences[0].Kind != "Namespace" || rb.OwnerReferences[0].Name != tenant {
		t.Errorf("RoleBinding owners %+v, want the tenant Namespace %s (it goes with it)", rb.OwnerReferences, tenant)
	}
	dep := &appsv1.Deployment{}
	testenv.EventuallyOK(t, "the gateway's Deployment", 15*time.Second, func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: workload.Name(gw)}, dep)
	})
	if args := dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--liqo-namespace="+liqoNS) {
		t.Errorf("gateway args %v lack --liqo-namespace=%s", args, liqoNS)
	}

	// The gateway's ServiceAccount, impersonated: it reads the Liqo namespace's IPs, and only them.
	sa := "system:serviceaccount:" + tenant + ":" + workload.Name(gw)
	cfg := rest.CopyConfig(cl.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: sa}
	as, err := client.New(cfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ips := &ipamv1alpha1.IPList{}
	if err := as.List(ctx, ips, client.InNamespace(liqoNS)); err != nil || len(ips.Items) != 1 {
		t.Errorf("the gateway listing the IPs of %s: %d (%v), want the one there", liqoNS, len(ips.Items), err)
	}
	if err := as.Get(ctx, client.ObjectKey{Namespace: liqoNS, Name: "api-server-proxy"}, &ipamv1alpha1.IP{}); err != nil {
		t.Errorf("the gateway getting IP %s/api-server-proxy: %v", liqoNS, err)
	}
	if err := as.List(ctx, &ipamv1alpha1.IPList{}, client.InNamespace(tenant)); !apierrors.IsForbidden(err) {
		t.Errorf("the gateway listing the IPs of its tenant namespace: %v, want forbidden", err)
	}
	if err := as.List(ctx, &ipamv1alpha1.IPList{}); !apierrors.IsForbidden(err) {
		t.Errorf("the gateway listing IPs of every namespace: %v, want forbidden", err)
	}
	if err := as.Create(ctx, &ipamv1alpha1.IP{ObjectMeta: metav1.ObjectMeta{Namespace: liqoNS, Name: "mine"},
		Spec: ipamv1alpha1.IPSpec{IP: "10.96.0.22"}}); !apierrors.IsForbidden(err) {
		t.Errorf("the gateway creating an IP in %s: %v, want forbidden", liqoNS, err)
	}
	if err := as.List(ctx, &corev1.SecretList{}, client.InNamespace(liqoNS)); !apierrors.IsForbidden(err) {
		t.Errorf("the gateway listing the Secrets of %s: %v, want forbidden", liqoNS, err)
	}
	for verb, want := range map[string]bool{"watch": true, "update": false, "delete": false, "patch": false} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: sa,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: ipamv1alpha1.GroupVersion.Group, Resource: "ips", Verb: verb, Namespace: liqoNS}}}
		if err := c.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != want {
			t.Errorf("the gateway may %s IPs in %s: %t, want %t", verb, liqoNS, sar.Status.Allowed, want)
		}
	}

	// The gateway goes: its binding goes with it (the garbage collector does not, across
	// namespaces); the other gateway's stays.
	if err := c.Delete(ctx, gw); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyOK(t, "the deleted gateway's RoleBinding removed", 15*time.Second, func() error {
		if _, err := binding(gw); !apierrors.IsNotFound(err) {
			return failure("still there: " + errString(err))
		}
		return nil
	})
	if _, err := binding(kept); err != nil {
		t.Errorf("the other gateway's RoleBinding: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
