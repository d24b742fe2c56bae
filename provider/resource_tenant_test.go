package provider_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
)

// tenantConfig: the tenant namespace of consumer "tn-acc" in the provider cluster and a Tenant in
// it; extra is more attributes of the Tenant.
func tenantConfig(consumerID, extra string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_tenant_namespace" "ns" {
  cluster           = "provider"
  remote_cluster_id = "tn-acc"
}

resource "liqo_tenant" "t" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.ns.name
  consumer_cluster_id = %q
  %s
}
`, consumerID, extra)
}

func getTenant(ctx context.Context, namespace, name string) (*authv1beta1.Tenant, error) {
	t := &authv1beta1.Tenant{}
	err := cluster("provider").Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, t)
	return t, err
}

func checkTenant(namespace, name string, check func(*authv1beta1.Tenant) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		t, err := getTenant(context.Background(), namespace, name)
		if err != nil {
			return fmt.Errorf("Tenant %s/%s in provider: %w", namespace, name, err)
		}
		return check(t)
	}
}

func checkTenantGone(namespace, name string) error {
	_, err := getTenant(context.Background(), namespace, name)
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("Tenant %s/%s still exists in provider: %w", namespace, name, err)
	}
	return nil
}

// deleteObjectOutOfBand deletes an object in a test cluster as someone outside Terraform would,
// and waits until it is gone.
func deleteObjectOutOfBand(t *testing.T, clusterName string, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	c := cluster(clusterName).Client
	if err := c.Delete(ctx, obj); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%s/%s not gone: %v", obj.GetNamespace(), obj.GetName(), err)
	}
}

func TestAccTenant(t *testing.T) {
	const addr, ns = "liqo_tenant.t", "liqo-tenant-tn-acc"
	pub := base64.StdEncoding.EncodeToString([]byte("consumer public key"))
	sig := base64.StdEncoding.EncodeToString([]byte("signed nonce"))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(s *terraform.State) error {
			for _, n := range []string{"tn-consumer-a", "tn-consumer-b"} {
				if err := checkTenantGone(ns, n); err != nil {
					return err
				}
			}
			return checkNamespaceGone("provider", ns)(s)
		},
		Steps: []resource.TestStep{
			{
				// Declarative peering: no handshake.
				Config: tenantConfig("tn-consumer-a", `authz_policy = "TolerateNoHandshake"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("name"), knownvalue.StringExact("tn-consumer-a")),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("tenant_condition"), knownvalue.StringExact("Active")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("provider/"+ns+"/tn-consumer-a")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("authz_policy"), knownvalue.StringExact("TolerateNoHandshake")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("tenant_condition"), knownvalue.StringExact("Active")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("public_key"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("tenant_namespace"), knownvalue.Null()),
				},
				Check: checkTenant(ns, "tn-consumer-a", func(tn *authv1beta1.Tenant) error {
					if tn.Spec.ClusterID != "tn-consumer-a" || tn.Spec.AuthzPolicy != authv1beta1.TolerateNoHandshake ||
						tn.Spec.TenantCondition != authv1beta1.TenantConditionActive {
						return fmt.Errorf("unexpected spec %+v", tn.Spec)
					}
					if tn.Labels["liqo.io/remote-cluster-id"] != "tn-consumer-a" {
						return fmt.Errorf("labels %v lack liqo.io/remote-cluster-id=tn-consumer-a", tn.Labels)
					}
					return nil
				}),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           "provider/" + ns + "/tn-consumer-a",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				// A proxy URL that is not one is refused at plan.
				Config:      tenantConfig("tn-consumer-a", `proxy_url = "10.71.0.1:8118"`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)proxy_url.*is\s+not\s+an\s+http\(s\)\s+URL\s+with\s+a\s+host`),
			},
			{
				// In place: cordoned, with the handshake's keys and an in-band proxy URL; the policy
				// goes back to the default.
				Config: tenantConfig("tn-consumer-a", fmt.Sprintf(`tenant_condition = "Cordoned"
  public_key = %q
  signature  = %q
  proxy_url  = "http://10.71.0.1:8118"`, pub, sig)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("authz_policy"), knownvalue.StringExact("KeysExchange")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("public_key"), knownvalue.StringExact(pub)),
				},
				Check: checkTenant(ns, "tn-consumer-a", func(tn *authv1beta1.Tenant) error {
					if tn.Spec.TenantCondition != authv1beta1.TenantConditionCordoned || tn.Spec.AuthzPolicy != authv1beta1.KeysExchange ||
						string(tn.Spec.PublicKey) != "consumer public key" || string(tn.Spec.Signature) != "signed nonce" ||
						tn.Spec.ProxyURL != "http://10.71.0.1:8118" {
						return fmt.Errorf("unexpected spec %+v", tn.Spec)
					}
					return nil
				}),
			},
			{
				// Another consumer: the API's clusterID is immutable, so the Tenant is replaced.
				Config: tenantConfig("tn-consumer-b", `tenant_condition = "Drained"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkTenant(ns, "tn-consumer-b", func(tn *authv1beta1.Tenant) error {
						if tn.Spec.ClusterID != "tn-consumer-b" || tn.Spec.TenantCondition != authv1beta1.TenantConditionDrained {
							return fmt.Errorf("unexpected spec %+v", tn.Spec)
						}
						if len(tn.Spec.PublicKey) != 0 {
							return fmt.Errorf("public key %q left over", tn.Spec.PublicKey)
						}
						return nil
					}),
					func(*terraform.State) error { return checkTenantGone(ns, "tn-consumer-a") },
				),
			},
			{
				// The status the controllers report shows up (the test writes it as a stand-in for them).
				PreConfig: func() {
					ctx := context.Background()
					tn, err := getTenant(ctx, ns, "tn-consumer-b")
					if err != nil {
						t.Fatal(err)
					}
					tn.Status.TenantNamespace = ns
					if err := cluster("provider").Client.Status().Update(ctx, tn); err != nil {
						t.Fatal(err)
					}
				},
				Config: tenantConfig("tn-consumer-b", `tenant_condition = "Drained"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("tenant_namespace"), knownvalue.StringExact(ns)),
				},
			},
			{
				// Deleted outside Terraform: planned for re-creation.
				PreConfig: func() {
					deleteObjectOutOfBand(t, "provider", &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tn-consumer-b"}})
				},
				Config: tenantConfig("tn-consumer-b", `tenant_condition = "Drained"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: checkTenant(ns, "tn-consumer-b", func(*authv1beta1.Tenant) error { return nil }),
			},
		},
	})
}
