package provider_test

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// setupForeignClusters stands in for the consumer's liqo controllers, which the test clusters do
// not run: two ForeignClusters with their status, one named after its cluster ID and one not.
func setupForeignClusters(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c := cluster("consumer").Client
	now := metav1.Now()
	byName := &corev1beta1.ForeignCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cl-fc-prov"},
		Spec:       corev1beta1.ForeignClusterSpec{ClusterID: "cl-fc-prov"},
	}
	byID := &corev1beta1.ForeignCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "some-other-name"},
		Spec:       corev1beta1.ForeignClusterSpec{ClusterID: "cl-fc-byid"},
	}
	for _, fc := range []*corev1beta1.ForeignCluster{byName, byID} {
		if !offCreateOwned(t, c, fc) {
			t.Fatalf("ForeignCluster %s exists already", fc.Name)
		}
	}
	byName.Status = corev1beta1.ForeignClusterStatus{
		Role:            corev1beta1.ProviderRole,
		APIServerURL:    "https://provider.example:6443",
		TenantNamespace: corev1beta1.TenantNamespace{Local: "liqo-tenant-cl-fc-prov", Remote: "liqo-tenant-cl-consumer"},
		Conditions: []corev1beta1.Condition{{Type: corev1beta1.APIServerStatusCondition, Status: corev1beta1.ConditionStatusReady,
			LastTransitionTime: now, Reason: "APIServerReady", Message: "the API server answers"}},
		Modules: corev1beta1.Modules{
			Networking: corev1beta1.Module{Enabled: true, Conditions: []corev1beta1.Condition{{
				Type: corev1beta1.NetworkConnectionStatusCondition, Status: corev1beta1.ConditionStatusEstablished,
				LastTransitionTime: now, Reason: "ConnectionEstablished", Message: "the gateways are connected"}}},
			Authentication: corev1beta1.Module{Enabled: true, Conditions: []corev1beta1.Condition{{
				Type: corev1beta1.AuthIdentityControlPlaneStatusCondition, Status: corev1beta1.ConditionStatusEstablished,
				LastTransitionTime: now}}},
		},
	}
	byID.Status = corev1beta1.ForeignClusterStatus{Role: corev1beta1.ConsumerRole}
	for _, fc := range []*corev1beta1.ForeignCluster{byName, byID} {
		if err := c.Status().Update(ctx, fc); err != nil {
			t.Fatal(err)
		}
	}
	// The gateway's Connection in the local tenant namespace, with its measured latency.
	offCreateOwned(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-cl-fc-prov"}})
	conn := &netv1beta1.Connection{ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: "liqo-tenant-cl-fc-prov"},
		Spec: netv1beta1.ConnectionSpec{Type: netv1beta1.ConnectionTypeClient,
			GatewayRef: corev1.ObjectReference{Kind: "GatewayClient", Name: "client", Namespace: "liqo-tenant-cl-fc-prov"}}}
	offCreateOwned(t, c, conn)
	conn.Status = netv1beta1.ConnectionStatus{Value: netv1beta1.Connected,
		Latency: netv1beta1.ConnectionLatency{Value: "812µs", Timestamp: now}}
	if err := c.Status().Update(ctx, conn); err != nil {
		t.Fatal(err)
	}
}

func TestAccForeignClusterDataSource(t *testing.T) {
	const cfg = `
data "liqo_foreign_cluster" "prov" {
  cluster    = "consumer"
  cluster_id = "cl-fc-prov"
}

data "liqo_foreign_cluster" "byid" {
  cluster    = "consumer"
  cluster_id = "cl-fc-byid"
}
`
	const prov, byid = "data.liqo_foreign_cluster.prov", "data.liqo_foreign_cluster.byid"
	cond := func(typ, status string, reason, message knownvalue.Check) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{
			"type": knownvalue.StringExact(typ), "status": knownvalue.StringExact(status), "reason": reason, "message": message,
		})
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				// Not peered (yet): a clear error.
				Config: providerBlock() + `
data "liqo_foreign_cluster" "absent" {
  cluster    = "consumer"
  cluster_id = "cl-fc-absent"
}
`,
				ExpectError: offWrappedText(`cluster "consumer"`, `has no ForeignCluster for cluster ID "cl-fc-absent":`,
					`it is not peered with that cluster, or its liqo controllers have not recorded the peering yet`),
			},
			{
				PreConfig: func() { setupForeignClusters(t) },
				Config:    providerBlock() + cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(prov, tfjsonpath.New("name"), knownvalue.StringExact("cl-fc-prov")),
					statecheck.ExpectKnownValue(prov, tfjsonpath.New("role"), knownvalue.StringExact("Provider")),
					statecheck.ExpectKnownValue(prov, tfjsonpath.New("api_server_url"), knownvalue.StringExact("https://provider.example:6443")),
					statecheck.ExpectKnownValue(prov, tfjsonpath.New("local_tenant_namespace"), knownvalue.StringExact("liqo-tenant-cl-fc-prov")),
					statecheck.ExpectKnownValue(prov, tfjsonpath.New("remote_tenant_namespace"), knownvalue.StringExact("liqo-tenant-cl-consumer")),
					statecheck.ExpectKnownValue(prov, tfjsonpath.New("conditions"), knownvalue.ListExact([]knownvalue.Check{
						cond("APIServerStatus", "Ready", knownvalue.StringExact("APIServerReady"), knownvalue.StringExact("the API server answers")),
					})),
					statecheck.ExpectKnownValue(prov, tfjsonpath.New("networking"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"enabled": knownvalue.Bool(true),
						"conditions": knownvalue.ListExact([]knownvalue.Check{cond("NetworkConnectionStatus", "Established",
							knownvalue.StringExact("ConnectionEstablished"), knownvalue.StringExact("the gateways are connected"))}),
					})),
					statecheck.ExpectKnownValue(prov, tfjsonpath.New("authentication"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"enabled": knownvalue.Bool(true),
						"conditions": knownvalue.ListExact([]knownvalue.Check{
							cond("AuthIdentityControlPlaneStatus", "Established", knownvalue.Null(), knownvalue.Null())}),
					})),
					statecheck.ExpectKnownValue(prov, tfjsonpath.New("offloading"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"enabled": knownvalue.Bool(false), "conditions": knownvalue.ListSizeExact(0),
					})),
					// Found by spec.clusterID, though named otherwise.
					statecheck.ExpectKnownValue(byid, tfjsonpath.New("name"), knownvalue.StringExact("some-other-name")),
					statecheck.ExpectKnownValue(byid, tfjsonpath.New("role"), knownvalue.StringExact("Consumer")),
					statecheck.ExpectKnownValue(byid, tfjsonpath.New("api_server_url"), knownvalue.Null()),
					// The tunnel's latency, from the Connection; none without a tenant namespace.
					statecheck.ExpectKnownValue(prov, tfjsonpath.New("tunnel_latency"), knownvalue.StringExact("812µs")),
					statecheck.ExpectKnownValue(byid, tfjsonpath.New("tunnel_latency"), knownvalue.Null()),
				},
			},
		},
	})
}
