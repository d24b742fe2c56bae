package peering_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestPeerGatewayPortTaken: the provider runs the gateway server of another peering on the
// default UDP port; a peering with networking on the same port fails within seconds (not at
// the end of its wait for the tunnel) with the controller's reason, naming the other
// GatewayServer and the free port to set.
func TestPeerGatewayPortTaken(t *testing.T) {
	a, b, _ := twoClusters(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const other = "liqo-tenant-cl-other"
	if err := b.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}); err != nil {
		t.Fatal(err)
	}
	// Gone before the next test on the shared clusters (the cleanup of twoClusters, which runs
	// after this one, waits for it as for any tenant namespace).
	t.Cleanup(func() {
		if err := b.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}); err != nil {
			t.Errorf("cleaning up: %v", err)
		}
	})
	held := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "cl-other",
		Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-other"}},
		Spec: netv1beta1.GatewayServerSpec{Endpoint: netv1beta1.Endpoint{Port: consts.DefaultGatewayPort, ServiceType: corev1.ServiceTypeClusterIP}}}
	if err := b.Client.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the other peering's gateway Deployment", 30*time.Second, func(ctx context.Context) bool {
		dep := &appsv1.Deployment{}
		return b.Client.Get(ctx, client.ObjectKey{Namespace: other, Name: "gw-cl-other"}, dep) == nil && *dep.Spec.Replicas == 1
	})

	start := time.Now()
	_, err := peering.Peer(ctx, a, b, peering.Options{Networking: true, Resources: resources("1", "1Gi", "10"),
		Gateway: peering.Gateway{ServiceType: corev1.ServiceTypeClusterIP, Port: consts.DefaultGatewayPort, MTU: 1340}})
	took := time.Since(start)
	if err == nil {
		t.Fatal("Peer succeeded on a port taken by another GatewayServer")
	}
	for _, want := range []string{"the gateway server of this peering does not run", "GatewayServer liqo-tenant-cl-a/cl-a on b",
		"UDP port 51840 is taken", "GatewayServer liqo-tenant-cl-other/cl-other (the tunnel to cluster cl-other)", "set gateway.port = 51841"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q: want it to say %q", err, want)
		}
	}
	if took > 15*time.Second {
		t.Errorf("Peer failed after %s, want within seconds", took)
	}
	t.Logf("Peer failed %s after it began: %v", took.Round(time.Millisecond), err)
}
