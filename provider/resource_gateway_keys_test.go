package provider_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func gatewayKeysConfig(namespace, name, remoteID, extra string) string {
	nameLine := ""
	if name != "" {
		nameLine = fmt.Sprintf("name = %q", name)
	}
	return providerBlock() + fmt.Sprintf(`
resource "liqo_gateway_keys" "gw" {
  cluster           = "consumer"
  namespace         = %q
  %s
  remote_cluster_id = %q
  %s
}
`, namespace, nameLine, remoteID, extra)
}

// keySecret reads a key Secret from a test cluster.
func keySecret(clusterName, namespace, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := cluster(clusterName).Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, s)
	return s, err
}

// checkKeySecret checks a key Secret's shape (type, labels, a matching 32-byte pair) and, when
// wantPriv is set, its private key; it returns the private key through got.
func checkKeySecret(clusterName, namespace, name, remoteID string, wantPriv *wgtypes.Key, got *[]byte) resource.TestCheckFunc {
	return func(*terraform.State) error {
		s, err := keySecret(clusterName, namespace, name)
		if err != nil {
			return fmt.Errorf("Secret %s/%s in %s: %w", namespace, name, clusterName, err)
		}
		if s.Type != corev1.SecretTypeOpaque {
			return fmt.Errorf("Secret type %q, want Opaque", s.Type)
		}
		if s.Labels["liqo.io/remote-cluster-id"] != remoteID || s.Labels["networking.liqo.io/gateway-resource"] != "true" {
			return fmt.Errorf("Secret labels %v", s.Labels)
		}
		priv, pub := s.Data["privateKey"], s.Data["publicKey"]
		if len(priv) != 32 || len(pub) != 32 {
			return fmt.Errorf("Secret data lengths privateKey %d publicKey %d, want 32 and 32", len(priv), len(pub))
		}
		k, _ := wgtypes.NewKey(priv)
		if derived := k.PublicKey(); !bytes.Equal(derived[:], pub) {
			return fmt.Errorf("publicKey does not match privateKey")
		}
		if wantPriv != nil && !bytes.Equal(wantPriv[:], priv) {
			return fmt.Errorf("privateKey is not the configured one")
		}
		if got != nil {
			*got = append([]byte(nil), priv...)
		}
		return nil
	}
}

// publicKeyOf is the base64 public key of a raw private key.
func publicKeyOf(priv []byte) string {
	k, err := wgtypes.NewKey(priv)
	if err != nil {
		return "invalid"
	}
	return k.PublicKey().String()
}

// expectPublicKeyOf is a state check that public_key matches a raw private key known when it runs.
type expectPublicKeyOf struct {
	addr string
	priv func() []byte
}

func (e expectPublicKeyOf) CheckState(ctx context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	statecheck.ExpectKnownValue(e.addr, tfjsonpath.New("public_key"), knownvalue.StringExact(publicKeyOf(e.priv()))).CheckState(ctx, req, resp)
}

func TestAccGatewayKeys(t *testing.T) {
	const (
		addr = "liqo_gateway_keys.gw"
		ns   = "nw-keys"
	)
	nwTestNamespace(t, "consumer", ns)
	given, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	// Every private key the test has seen, to look for in each plan and state.
	var generated1, generated2 []byte
	secrets := func() [][]byte {
		out := [][]byte{given[:]}
		for _, k := range [][]byte{generated1, generated2} {
			if k != nil {
				out = append(out, k)
			}
		}
		return out
	}
	noSecretInPlan := nwPlanHasNoSecret{secrets}
	noSecretInState := nwStateHasNoSecret{secrets}
	// The given key comes through an ephemeral variable, as a user would pass it: a literal in the
	// configuration would be in the plan's copy of the configuration by the user's own doing.
	withGiven := "private_key_wo = var.private_key\n  private_key_wo_version = 1"
	const keyVariable = `
variable "private_key" {
  type      = string
  ephemeral = true
  sensitive = true
}
`
	vars := config.Variables{"private_key": config.StringVariable(given.String())}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: nwCheckGone("consumer",
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw-keys"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw-keys-2"}}),
		Steps: []resource.TestStep{
			{
				// No key given: the provider generates one and writes it only into the Secret.
				Config: gatewayKeysConfig(ns, "", "cl-provider", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("public_key")),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("private_key_wo"), knownvalue.Null()),
					noSecretInPlan,
				}},
				Check: checkKeySecret("consumer", ns, "gw-keys", "cl-provider", nil, &generated1),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("consumer/nw-keys/gw-keys")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("name"), knownvalue.StringExact("gw-keys")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("private_key_wo"), knownvalue.Null()),
					expectPublicKeyOf{addr, func() []byte { return generated1 }},
					noSecretInState,
				},
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     "consumer/nw-keys/gw-keys",
				ImportStateVerify: true,
			},
			{
				// A given key through the write-only attribute: rotated in place.
				Config:          gatewayKeysConfig(ns, "", "cl-provider", withGiven) + keyVariable,
				ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("public_key")),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("private_key_wo"), knownvalue.Null()),
					noSecretInPlan,
				}},
				Check: checkKeySecret("consumer", ns, "gw-keys", "cl-provider", &given, nil),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("public_key"), knownvalue.StringExact(given.PublicKey().String())),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("private_key_wo"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("private_key_wo_version"), knownvalue.Int64Exact(1)),
					noSecretInState,
				},
			},
			{
				// Relabelled in place; the key stays, and the plan shows the public key.
				Config:          gatewayKeysConfig(ns, "", "cl-other", withGiven) + keyVariable,
				ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("public_key"), knownvalue.StringExact(given.PublicKey().String())),
					noSecretInPlan,
				}},
				Check: checkKeySecret("consumer", ns, "gw-keys", "cl-other", &given, nil),
			},
			{
				// The version without a given key: a new generated key.
				Config: gatewayKeysConfig(ns, "", "cl-other", "private_key_wo_version = 2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("public_key")),
					noSecretInPlan,
				}},
				Check: resource.ComposeTestCheckFunc(
					checkKeySecret("consumer", ns, "gw-keys", "cl-other", nil, &generated2),
					func(*terraform.State) error {
						if bytes.Equal(generated2, given[:]) || bytes.Equal(generated2, generated1) {
							return fmt.Errorf("the key was not rotated")
						}
						return nil
					},
				),
				ConfigStateChecks: []statecheck.StateCheck{
					expectPublicKeyOf{addr, func() []byte { return generated2 }},
					noSecretInState,
				},
			},
			{
				// A new name is a new Secret.
				Config: gatewayKeysConfig(ns, "gw-keys-2", "cl-other", "private_key_wo_version = 2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
					noSecretInPlan,
				}},
				Check: resource.ComposeTestCheckFunc(
					checkKeySecret("consumer", ns, "gw-keys-2", "cl-other", nil, nil),
					nwCheckGone("consumer", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw-keys"}}),
				),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("consumer/nw-keys/gw-keys-2")),
				},
			},
			{
				// Deleted outside Terraform: planned for re-creation.
				PreConfig: func() {
					nwDeleteOutOfBand(t, "consumer", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw-keys-2"}})
				},
				Config: gatewayKeysConfig(ns, "gw-keys-2", "cl-other", "private_key_wo_version = 2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: checkKeySecret("consumer", ns, "gw-keys-2", "cl-other", nil, nil),
			},
		},
	})
}

func TestAccGatewayKeysValidation(t *testing.T) {
	const badKey = "bm90LWEta2V5" // base64 of "not-a-key"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config:      gatewayKeysConfig("nw-keys-bad", "", "cl-provider", fmt.Sprintf("private_key_wo = %q\n  private_key_wo_version = 1", badKey)),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Invalid WireGuard key.*decodes to 9 bytes, a WireGuard key has 32`),
			},
			{
				Config:      gatewayKeysConfig("nw-keys-bad", "", "cl-provider", `private_key_wo = "YFnVJbOhOlRaqDEyg7yOSo5fKPbCQ9RYXuIdYjyGLmo="`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)private_key_wo_version.*must be specified`),
			},
			{
				Config:      gatewayKeysConfig("nw-keys-bad", "", "Not_A_Label", ""),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`must be a DNS label`),
			},
		},
	})
}
