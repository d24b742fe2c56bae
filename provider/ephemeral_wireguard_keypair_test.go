package provider_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/echoprovider"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// wireguardKeypairConfig feeds an ephemeral key pair into liqo_gateway_keys' write-only private
// key, checks with the function and a precondition that the pair matches, and copies the
// ephemeral public key to the echo provider (a test-only provider that stores what it is given),
// to compare it with the Secret actually written.
func wireguardKeypairConfig(namespace string, version int) string {
	return providerBlock() + fmt.Sprintf(`
ephemeral "liqo_wireguard_keypair" "gw" {}

resource "liqo_gateway_keys" "gw" {
  cluster                = "consumer"
  namespace              = %q
  remote_cluster_id      = "cl-provider"
  private_key_wo         = ephemeral.liqo_wireguard_keypair.gw.private_key
  private_key_wo_version = %d

  lifecycle {
    precondition {
      condition     = provider::liqo::wireguard_public_key(ephemeral.liqo_wireguard_keypair.gw.private_key) == ephemeral.liqo_wireguard_keypair.gw.public_key
      error_message = "the ephemeral key pair does not match"
    }
  }
}

provider "echo" {
  data = ephemeral.liqo_wireguard_keypair.gw.public_key
}

resource "echo" "public_key" {}
`, namespace, version)
}

func TestAccWireguardKeypair(t *testing.T) {
	const (
		addr = "liqo_gateway_keys.gw"
		ns   = "nw-keypair"
	)
	nwTestNamespace(t, "consumer", ns)
	factories := map[string]func() (tfprotov6.ProviderServer, error){"echo": echoprovider.NewProviderServer()}
	for k, v := range protoV6Providers {
		factories[k] = v
	}
	var written1, written2 []byte
	secrets := func() [][]byte {
		out := [][]byte{}
		for _, k := range [][]byte{written1, written2} {
			if k != nil {
				out = append(out, k)
			}
		}
		return out
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		CheckDestroy:             nwCheckGone("consumer", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw-keys"}}),
		Steps: []resource.TestStep{
			{
				Config: wireguardKeypairConfig(ns, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("private_key_wo"), knownvalue.Null()),
				}},
				Check: checkKeySecret("consumer", ns, "gw-keys", "cl-provider", nil, &written1),
				ConfigStateChecks: []statecheck.StateCheck{
					// The Secret holds the key pair opened during the apply.
					statecheck.CompareValuePairs(addr, tfjsonpath.New("public_key"), "echo.public_key", tfjsonpath.New("data"), compare.ValuesSame()),
					expectPublicKeyOf{addr, func() []byte { return written1 }},
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("private_key_wo"), knownvalue.Null()),
					nwStateHasNoSecret{secrets},
				},
			},
			{
				// A new version: the key pair opened in this apply replaces the stored one.
				Config: wireguardKeypairConfig(ns, 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("public_key")),
					nwPlanHasNoSecret{secrets},
				}},
				Check: checkKeySecret("consumer", ns, "gw-keys", "cl-provider", nil, &written2),
				ConfigStateChecks: []statecheck.StateCheck{
					expectPublicKeyOf{addr, func() []byte { return written2 }},
					nwStateHasNoSecret{secrets},
				},
			},
		},
	})
}
