package provider_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

// TestAccPeeringGatewayPortInUse: a provider whose gateways listen in its node's network
// namespace runs one gateway server per UDP port. With a GatewayServer of another peering on
// the default port there, planning a peering with networking fails, naming that GatewayServer
// and the free port to set (gateway.port = 51841); with that port the plan passes. Two new
// peerings with one provider on the default port, which a plan cannot tell apart, fail at
// apply within their timeout with the controller's reason (one of them; the other waits for a
// tunnel that no gateway makes here). Clusters running the real controller manager, no
// gateways.
func TestAccPeeringGatewayPortInUse(t *testing.T) {
	const c1, c2, p = "cl-consumer", "cl-consumer-2", "cl-provider"
	e := peeringEnv(t, c1, c2, p)
	block := peeringClustersBlock(e, map[string]string{"consumer": c1, "consumer-2": c2, "provider": p})
	peeringOf := func(name, consumer, gateway string) string {
		return fmt.Sprintf(`
resource "liqo_peering" %q {
  consumer_cluster = %q
  provider_cluster = "provider"
  cpu              = "1"
  memory           = "1Gi"
  pods             = "10"
  %s
  timeouts {
    create = "15s"
  }
}
`, name, consumer, gateway)
	}
	ctx := context.Background()
	provider := e.Cluster(p).Client
	held := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: "gw-other", Name: "cl-other",
		Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-other"}},
		Spec: netv1beta1.GatewayServerSpec{Endpoint: netv1beta1.Endpoint{Port: consts.DefaultGatewayPort, ServiceType: corev1.ServiceTypeClusterIP}}}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					if err := provider.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: held.Namespace}}); err != nil {
						t.Fatal(err)
					}
					if err := provider.Create(ctx, held.DeepCopy()); err != nil {
						t.Fatal(err)
					}
				},
				Config:   block + peeringOf("one", "consumer", ""),
				PlanOnly: true,
				ExpectError: offWrappedText(`Gateway port in use`, `peering of consumer "consumer" with provider "provider": its gateway server `+
					`would run on cluster "provider" (gateway.server_location = "Provider"), where UDP port 51840 is taken: GatewayServer `+
					`gw-other/cl-other (the tunnel to cluster cl-other) listens on it already`, `port 51841 is free. Set gateway.port = 51841`),
			},
			{
				Config:             block + peeringOf("one", "consumer", "gateway = { port = 51841 }"),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				PreConfig: func() {
					if err := provider.Delete(ctx, held); err != nil {
						t.Fatal(err)
					}
				},
				Config:      block + peeringOf("one", "consumer", "") + peeringOf("two", "consumer-2", ""),
				ExpectError: offWrappedText(`the gateway server of this peering does not run`, `UDP port 51840 is taken: GatewayServer`, `Fix: set gateway.port = 51841`),
			},
		},
	})
	// What the failed creates made (a create that fails before the authentication has nothing
	// its refresh finds), removed by the library.
	for _, consumer := range []string{c1, c2} {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := peering.Unpeer(ctx, peering.Cluster{Name: consumer, Client: e.Cluster(consumer).Client},
			peering.Cluster{Name: p, Client: provider}, peering.Options{Networking: true})
		cancel()
		if err != nil {
			t.Errorf("unpeering %s: %v", consumer, err)
		}
	}
	if err := checkNothingLeft(e, c1, c2, p); err != nil {
		t.Error(err)
	}
}
