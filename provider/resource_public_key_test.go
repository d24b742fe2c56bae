package provider_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// Public keys of seed 003's fixtures.
const (
	seedProviderPublicKey = "gRsmy/7IBiRfHw48xNKtp+9ODsI7wIu4wWWPEpn5cwU="
	seedConsumerPublicKey = "PcoRfoRt4C0tBDowW2H6PoYvAu0z/in7el/5EHaBLQo="
)

func publicKeyConfig(namespace, name, remoteID, key string) string {
	nameLine := ""
	if name != "" {
		nameLine = fmt.Sprintf("name = %q", name)
	}
	return providerBlock() + fmt.Sprintf(`
resource "liqo_public_key" "peer" {
  cluster           = "provider"
  namespace         = %q
  %s
  remote_cluster_id = %q
  public_key        = %q
}
`, namespace, nameLine, remoteID, key)
}

func pkObj(ns, name string) *networkingv1beta1.PublicKey {
	return &networkingv1beta1.PublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func checkPublicKeyObject(ns, name, remoteID, key string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		pk := &networkingv1beta1.PublicKey{}
		if err := cluster("provider").Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pk); err != nil {
			return fmt.Errorf("PublicKey %s/%s: %w", ns, name, err)
		}
		if got := base64.StdEncoding.EncodeToString(pk.Spec.PublicKey); got != key {
			return fmt.Errorf("PublicKey spec.publicKey = %s, want %s", got, key)
		}
		return nwCheckLabels("provider", pk, map[string]string{
			"liqo.io/remote-cluster-id":           remoteID,
			"networking.liqo.io/gateway-resource": "true",
		})(s)
	}
}

func TestAccPublicKey(t *testing.T) {
	const (
		addr = "liqo_public_key.peer"
		ns   = "nw-publickey"
	)
	nwTestNamespace(t, "provider", ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             nwCheckGone("provider", pkObj(ns, "gw-publickey"), pkObj(ns, "peer-key")),
		Steps: []resource.TestStep{
			{
				Config: publicKeyConfig(ns, "", "cl-consumer", seedConsumerPublicKey),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("name"), knownvalue.StringExact("gw-publickey")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("provider/nw-publickey/gw-publickey")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("public_key"), knownvalue.StringExact(seedConsumerPublicKey)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("remote_cluster_id"), knownvalue.StringExact("cl-consumer")),
				},
				Check: checkPublicKeyObject(ns, "gw-publickey", "cl-consumer", seedConsumerPublicKey),
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     "provider/nw-publickey/gw-publickey",
				ImportStateVerify: true,
			},
			{
				// The peer rotated its key: updated in place, and relabelled.
				Config: publicKeyConfig(ns, "", "cl-consumer-2", seedProviderPublicKey),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: checkPublicKeyObject(ns, "gw-publickey", "cl-consumer-2", seedProviderPublicKey),
			},
			{
				Config: publicKeyConfig(ns, "peer-key", "cl-consumer-2", seedProviderPublicKey),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkPublicKeyObject(ns, "peer-key", "cl-consumer-2", seedProviderPublicKey),
					nwCheckGone("provider", pkObj(ns, "gw-publickey")),
				),
			},
			{
				PreConfig: func() { nwDeleteOutOfBand(t, "provider", pkObj(ns, "peer-key")) },
				Config:    publicKeyConfig(ns, "peer-key", "cl-consumer-2", seedProviderPublicKey),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: checkPublicKeyObject(ns, "peer-key", "cl-consumer-2", seedProviderPublicKey),
			},
		},
	})
}

func TestAccPublicKeyValidation(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				// Not a WireGuard key (31 bytes): a plan-time error.
				Config:      publicKeyConfig("nw-publickey-bad", "", "cl-consumer", base64.StdEncoding.EncodeToString(make([]byte, 31))),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Invalid WireGuard key.*decodes to 31 bytes`),
			},
			{
				// Not base64.
				Config:      publicKeyConfig("nw-publickey-bad", "", "cl-consumer", "not base64!"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Invalid WireGuard key.*not standard base64`),
			},
		},
	})
}
