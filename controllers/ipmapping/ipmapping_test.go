package ipmapping_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/ipmapping"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// statusIP reads an IP's allocated address ("" while none, or when it is gone).
func statusIP(ctx context.Context, c client.Client, ns, name string) (string, error) {
	ip := &ipamv1alpha1.IP{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ip); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return string(ip.Status.IP), nil
}

// TestIPAllocation: IPs in any namespace get distinct addresses of a small external CIDR
// (10.70.0.0/30: .0 is kept for unknown sources and .3 is its last, so .1 and .2 are all there
// is), the lowest first, with the CIDR in status; a third IP waits until one is deleted, then
// takes the freed address, and the others keep theirs.
func TestIPAllocation(t *testing.T) {
	ctx := t.Context()
	env := cluster.Env(t)
	c := env.Cluster("a").Client
	testenv.StartManager(t, env.Cluster("a"), func(mgr ctrl.Manager) error {
		return (&ipmapping.IPReconciler{Client: mgr.GetClient(), ExternalCIDR: "10.70.0.0/30"}).SetupWithManager(mgr)
	})
	for _, ns := range []string{"n1", "n2"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// The next test on the shared cluster counts every IP of the cluster: these go at the end.
	t.Cleanup(func() {
		for _, ns := range []string{"n1", "n2"} {
			if err := c.DeleteAllOf(context.Background(), &ipamv1alpha1.IP{}, client.InNamespace(ns)); err != nil {
				t.Errorf("deleting the IPs of %s: %v", ns, err)
			}
		}
	})
	create := func(ns, name, local string) {
		t.Helper()
		if err := c.Create(ctx, &ipamv1alpha1.IP{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: ipamv1alpha1.IPSpec{IP: netv1beta1.IP(local)}}); err != nil {
			t.Fatal(err)
		}
	}
	create("n1", "first", "10.0.0.10")
	testenv.Poll(t, "the first IP's address", 30*time.Second, func(ctx context.Context) (bool, error) {
		a, err := statusIP(ctx, c, "n1", "first")
		return a == "10.70.0.1", err
	})
	create("n2", "second", "10.0.0.11")
	testenv.Poll(t, "the second IP's address", 30*time.Second, func(ctx context.Context) (bool, error) {
		a, err := statusIP(ctx, c, "n2", "second")
		return a == "10.70.0.2", err
	})
	ip := &ipamv1alpha1.IP{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "n2", Name: "second"}, ip); err != nil {
		t.Fatal(err)
	}
	if ip.Status.CIDR != "10.70.0.0/30" {
		t.Errorf("IP n2/second: status.cidr %q, want the external CIDR 10.70.0.0/30", ip.Status.CIDR)
	}

	create("n1", "third", "10.0.0.12")
	time.Sleep(2 * time.Second)
	if a, err := statusIP(ctx, c, "n1", "third"); err != nil || a != "" {
		t.Fatalf("IP n1/third with the external CIDR full: address %q (%v), want none", a, err)
	}
	if err := c.Delete(ctx, &ipamv1alpha1.IP{ObjectMeta: metav1.ObjectMeta{Namespace: "n1", Name: "first"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the third IP to take the freed address", 60*time.Second, func(ctx context.Context) (bool, error) {
		a, err := statusIP(ctx, c, "n1", "third")
		return a == "10.70.0.1", err
	})
	if a, err := statusIP(ctx, c, "n2", "second"); err != nil || a != "10.70.0.2" {
		t.Errorf("IP n2/second after the others changed: %q (%v), want it kept at 10.70.0.2", a, err)
	}
}

// TestUnknownSourceIP: the first address of the external CIDR, and an error for a bad CIDR.
func TestUnknownSourceIP(t *testing.T) {
	if got, err := ipmapping.UnknownSourceIP("10.70.0.0/16"); err != nil || got != "10.70.0.0" {
		t.Errorf("UnknownSourceIP(10.70.0.0/16) = %q, %v; want 10.70.0.0", got, err)
	}
	for _, bad := range []string{"10.70.0.0", "fd00::/64"} {
		if _, err := ipmapping.UnknownSourceIP(bad); err == nil {
			t.Errorf("UnknownSourceIP(%q): no error", bad)
		}
	}
}

// TestAPIServerProxyIP: the proxy's Service in its namespace (label app.kubernetes.io/name=proxy;
// here the chart's release namespace, not the Liqo namespace) gets the IP api-server-proxy in
// the Liqo namespace, labelled and annotated as upstream does, holding its cluster IP and an
// external address; a Service of that name elsewhere, or without the label, gets none. When the Service goes, so does the IP; a new Service (another
// cluster IP) gets a new one.
func TestAPIServerProxyIP(t *testing.T) {
	ctx := t.Context()
	env := cluster.Env(t)
	c := env.Cluster("a").Client
	testenv.StartManager(t, env.Cluster("a"), func(mgr ctrl.Manager) error {
		if err := (&ipmapping.IPReconciler{Client: mgr.GetClient(), ExternalCIDR: "10.70.0.0/16"}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&ipmapping.ProxyReconciler{Client: mgr.GetClient(), LiqoNamespace: "liqo-system", ServiceNamespace: "release"}).SetupWithManager(mgr)
	})
	for _, ns := range []string{"liqo-system", "release"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	service := func(ns string, labels map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consts.APIServerProxyService, Labels: labels},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: consts.APIServerProxyPort}}}}
	}
	proxyLabels := map[string]string{consts.AppNameLabel: consts.APIServerProxyApp}
	if err := c.Create(ctx, service("liqo-system", proxyLabels)); err != nil {
		t.Fatal(err)
	}
	unlabelled := service("release", nil)
	unlabelled.Name = "not-the-proxy"
	if err := c.Create(ctx, unlabelled); err != nil {
		t.Fatal(err)
	}
	svc := service("release", proxyLabels)
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: "liqo-system", Name: consts.APIServerProxyIP}
	wantIP := func(what, clusterIP string) *ipamv1alpha1.IP {
		t.Helper()
		ip := &ipamv1alpha1.IP{}
		testenv.Poll(t, what, 30*time.Second, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, key, ip)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return string(ip.Spec.IP) == clusterIP && ip.Status.IP != "", err
		})
		if ip.Labels[consts.IPTypeLabel] != consts.APIServerProxyIP || ip.Annotations[consts.PreinstalledAnnotation] != "true" ||
			ip.Labels[consts.ManagedByLabel] != consts.ManagedByControllerManager {
			t.Errorf("IP %s: labels %v, annotations %v; want %s=%s, %s=%s (the uninstall removes it) and %s=true", key, ip.Labels,
				ip.Annotations, consts.IPTypeLabel, consts.APIServerProxyIP, consts.ManagedByLabel, consts.ManagedByControllerManager,
				consts.PreinstalledAnnotation)
		}
		return ip
	}
	ip := wantIP("the proxy's IP", svc.Spec.ClusterIP)
	t.Logf("proxy %s (cluster IP %s) reached at %s", key, ip.Spec.IP, ip.Status.IP)
	list := &ipamv1alpha1.IPList{}
	if err := c.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range list.Items {
		names = append(names, i.Namespace+"/"+i.Name)
	}
	if !slices.Equal(names, []string{key.String()}) {
		t.Errorf("IPs %v, want only %s (none for the other namespace's or the unlabelled Service)", names, key)
	}

	if err := c.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the proxy's IP to go with its Service", 30*time.Second, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, &ipamv1alpha1.IP{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	again := service("release", proxyLabels)
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	if again.Spec.ClusterIP == svc.Spec.ClusterIP {
		t.Logf("the new Service got the same cluster IP %s", again.Spec.ClusterIP)
	}
	wantIP("the proxy's IP for the new Service", again.Spec.ClusterIP)
}
