package gatewayclient_test

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/gatewayclient"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/gatewaytest"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestGatewayClient checks that a GatewayClient gets a generated key Secret and a gateway
// Deployment in client mode with NET_ADMIN and /dev/net/tun, and both in its status.
func TestGatewayClient(t *testing.T) {
	ctx := t.Context()
	env := testenv.New(t, testenv.ClusterOptions{Name: "b"})
	cl := env.Cluster("b")
	c := cl.Client
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&gatewayclient.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})

	ns := "liqo-tenant-a"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	udp := corev1.ProtocolUDP
	gw := &netv1beta1.GatewayClient{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "client"},
		Spec: netv1beta1.GatewayClientSpec{Endpoint: netv1beta1.EndpointStatus{Addresses: []string{"192.0.2.1"}, Port: 51840, Protocol: &udp}}}
	if err := c.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			t.Fatal(err)
		}
		if gw.Status.ClientRef != nil && gw.Status.SecretRef != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never filled: %+v", gw.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: gw.Status.SecretRef.Name}, secret); err != nil {
		t.Fatalf("generated key Secret: %v", err)
	}
	gatewaytest.CheckKeyPair(t, secret)
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: gw.Status.ClientRef.Name}, dep); err != nil {
		t.Fatal(err)
	}
	ctr := dep.Spec.Template.Spec.Containers[0]
	for _, a := range []string{"--mode=client", "--namespace=" + ns, "--gateway=client", "--secret=" + secret.Name} {
		if !slices.Contains(ctr.Args, a) {
			t.Errorf("args %v lack %s", ctr.Args, a)
		}
	}
	if ctr.SecurityContext == nil || !slices.Contains(ctr.SecurityContext.Capabilities.Add, "NET_ADMIN") {
		t.Errorf("no NET_ADMIN: %+v", ctr.SecurityContext)
	}
	if v := dep.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].HostPath == nil || v[0].HostPath.Path != "/dev/net/tun" {
		t.Errorf("no /dev/net/tun volume: %+v", v)
	}
	if !metav1.IsControlledBy(dep, gw) || dep.Spec.Template.Spec.ServiceAccountName == "" {
		t.Errorf("deployment owners %v, service account %q", dep.OwnerReferences, dep.Spec.Template.Spec.ServiceAccountName)
	}
	// The generated Secret is recreated when deleted.
	if err := c.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		fresh := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), fresh); err == nil && fresh.UID != secret.UID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("deleted key Secret was not generated again")
		}
	}

	// Being deleted (held here by a finalizer, in a foreground deletion by the garbage collector
	// waiting for its Deployment), the client gets nothing written again.
	if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
		t.Fatal(err)
	}
	gw.Finalizers = []string{"example.org/hold"}
	if err := c.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, gw); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, dep); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the reconciler answers within milliseconds
	if err := c.Get(ctx, client.ObjectKeyFromObject(dep), &appsv1.Deployment{}); err == nil {
		t.Error("the Deployment was written again while its GatewayClient is being deleted")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
		t.Fatal(err)
	}
	gw.Finalizers = nil
	if err := c.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
}
