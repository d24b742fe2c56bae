package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

func gatewayClientConfig(namespace, name, remoteID, body string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_gateway_client" "gw" {
  cluster           = "consumer"
  namespace         = %q
  name              = %q
  remote_cluster_id = %q
  %s
}
`, namespace, name, remoteID, body)
}

func gcObj(ns, name string) *networkingv1beta1.GatewayClient {
	return &networkingv1beta1.GatewayClient{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// checkGatewayClient compares a GatewayClient's spec and remote-cluster label with the wanted ones.
func checkGatewayClient(ns, name, remoteID string, want networkingv1beta1.GatewayClientSpec) resource.TestCheckFunc {
	return func(*terraform.State) error {
		gc := &networkingv1beta1.GatewayClient{}
		if err := cluster("consumer").Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, gc); err != nil {
			return fmt.Errorf("GatewayClient %s/%s: %w", ns, name, err)
		}
		if gc.Labels["liqo.io/remote-cluster-id"] != remoteID {
			return fmt.Errorf("GatewayClient labels %v, want liqo.io/remote-cluster-id=%s", gc.Labels, remoteID)
		}
		if !equality.Semantic.DeepEqual(gc.Spec, want) {
			return fmt.Errorf("GatewayClient spec %+v, want %+v", gc.Spec, want)
		}
		return nil
	}
}

func TestAccGatewayClient(t *testing.T) {
	const (
		addr = "liqo_gateway_client.gw"
		ns   = "nw-gwclient"
	)
	nwTestNamespace(t, "consumer", ns)
	seed := `endpoint_addresses = ["172.18.0.3"]
  endpoint_port = 30742
  mtu = 1340
  secret_ref = "gw-keys"`
	// Seed 003's GatewayClient.
	seedSpec := networkingv1beta1.GatewayClientSpec{
		MTU: 1340,
		Endpoint: networkingv1beta1.EndpointStatus{
			Addresses: []string{"172.18.0.3"}, Port: 30742, Protocol: ptr.To(corev1.ProtocolUDP),
		},
		SecretRef: corev1.LocalObjectReference{Name: "gw-keys"},
		ClientTemplateRef: corev1.ObjectReference{
			APIVersion: "networking.liqo.io/v1beta1", Kind: "WgGatewayClientTemplate", Name: "wireguard-client", Namespace: "liqo",
		},
	}
	updated := `endpoint_addresses = ["172.18.0.4", "gw.example.com"]
  endpoint_port = 30743
  endpoint_protocol = "TCP"
  client_template = { kind = "WgGatewayClientTemplate", name = "custom-client", namespace = "liqo-templates" }`
	updatedSpec := networkingv1beta1.GatewayClientSpec{
		Endpoint: networkingv1beta1.EndpointStatus{
			Addresses: []string{"172.18.0.4", "gw.example.com"}, Port: 30743, Protocol: ptr.To(corev1.ProtocolTCP),
		},
		ClientTemplateRef: corev1.ObjectReference{
			APIVersion: "networking.liqo.io/v1beta1", Kind: "WgGatewayClientTemplate", Name: "custom-client", Namespace: "liqo-templates",
		},
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             nwCheckGone("consumer", gcObj(ns, "client"), gcObj(ns, "client-2")),
		Steps: []resource.TestStep{
			{
				Config: gatewayClientConfig(ns, "client", "cl-provider", seed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("consumer/nw-gwclient/client")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint_protocol"), knownvalue.StringExact("UDP")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("client_template").AtMapKey("name"), knownvalue.StringExact("wireguard-client")),
				},
				Check: checkGatewayClient(ns, "client", "cl-provider", seedSpec),
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     "consumer/nw-gwclient/client",
				ImportStateVerify: true,
			},
			{
				// The server moved and a custom template is used; MTU and key Secret left out.
				Config: gatewayClientConfig(ns, "client", "cl-provider-2", updated),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("mtu"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint_addresses"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("172.18.0.4"), knownvalue.StringExact("gw.example.com"),
					})),
				},
				Check: checkGatewayClient(ns, "client", "cl-provider-2", updatedSpec),
			},
			{
				Config: gatewayClientConfig(ns, "client-2", "cl-provider-2", updated),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkGatewayClient(ns, "client-2", "cl-provider-2", updatedSpec),
					nwCheckGone("consumer", gcObj(ns, "client")),
				),
			},
			{
				PreConfig: func() { nwDeleteOutOfBand(t, "consumer", gcObj(ns, "client-2")) },
				Config:    gatewayClientConfig(ns, "client-2", "cl-provider-2", updated),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: checkGatewayClient(ns, "client-2", "cl-provider-2", updatedSpec),
			},
		},
	})
}

func TestAccGatewayClientValidation(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config:      gatewayClientConfig("nw-bad", "client", "cl-provider", "endpoint_addresses = []\n  endpoint_port = 30742"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)endpoint_addresses.*at least 1`),
			},
			{
				Config:      gatewayClientConfig("nw-bad", "client", "cl-provider", `endpoint_addresses = ["172.18.0.3"]`+"\n"+`endpoint_port = 30742`+"\n"+`endpoint_protocol = "SCTP"`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)endpoint_protocol.*value must be one of`),
			},
			{
				Config:      gatewayClientConfig("nw-bad", "client", "cl-provider", `endpoint_addresses = ["172.18.0.3"]`+"\n"+`endpoint_port = 30742`+"\n"+`mtu = 100`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)mtu.*must be between 576 and 65535`),
			},
		},
	})
}
