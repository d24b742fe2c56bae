package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
)

// authSecretAbsentFromPlan fails when a secret string appears anywhere in the plan Terraform
// made (its full JSON form, which holds every planned and prior value, sensitive ones
// included). Only the copy of the configuration's source is left out: these tests write the
// secret as a literal in the HCL, where a real configuration references another resource.
type authSecretAbsentFromPlan struct{ secret string }

func (c authSecretAbsentFromPlan) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	p := *req.Plan
	p.Config = nil
	b, err := json.Marshal(&p)
	if err != nil {
		resp.Error = err
		return
	}
	if strings.Contains(string(b), c.secret) {
		resp.Error = fmt.Errorf("the secret %q appears in the plan", c.secret)
	}
}

// authSecretAbsentFromState fails when a secret string appears anywhere in the state.
type authSecretAbsentFromState struct{ secret string }

func (c authSecretAbsentFromState) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	b, err := json.Marshal(req.State)
	if err != nil {
		resp.Error = err
		return
	}
	if strings.Contains(string(b), c.secret) {
		resp.Error = fmt.Errorf("the secret %q appears in the state", c.secret)
	}
}

// identityTestKubeconfig is a kubeconfig whose token is the marker.
func identityTestKubeconfig(marker string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: provider
  cluster:
    server: https://provider.example:6443
    certificate-authority-data: Y2EtZGF0YQ==
users:
- name: consumer
  user:
    token: %s
contexts:
- name: provider
  context: {cluster: provider, user: consumer}
current-context: provider
`, marker)
}

// identityConfig: the consumer's tenant namespace for provider "idacc" and the Identity in it;
// kubeconfigAttrs sets kubeconfig_wo/_version or kubeconfig.
func identityConfig(providerID, remoteNS, kubeconfigAttrs string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_tenant_namespace" "ns" {
  cluster           = "consumer"
  remote_cluster_id = "idacc"
}

resource "liqo_identity" "id" {
  cluster                 = "consumer"
  namespace               = liqo_tenant_namespace.ns.name
  provider_cluster_id     = %q
  remote_tenant_namespace = %q
  %s
}
`, providerID, remoteNS, kubeconfigAttrs)
}

func identityWO(marker string, version int) string {
	return fmt.Sprintf("kubeconfig_wo = %q\n  kubeconfig_wo_version = %d", identityTestKubeconfig(marker), version)
}

// checkIdentityObjects checks the Identity and its Secret in the consumer cluster.
func checkIdentityObjects(ns, name, providerID, remoteNS, marker string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		c := cluster("consumer").Client
		id := &authv1beta1.Identity{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, id); err != nil {
			return fmt.Errorf("Identity %s/%s: %w", ns, name, err)
		}
		if string(id.Spec.ClusterID) != providerID || id.Spec.Type != authv1beta1.ControlPlaneIdentityType ||
			id.Spec.Namespace != remoteNS || id.Spec.AuthParams.APIServer != "https://provider.example:6443" ||
			string(id.Spec.AuthParams.CA) != "ca-data" {
			return fmt.Errorf("unexpected Identity spec %+v", id.Spec)
		}
		s := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kubeconfig-" + name}, s); err != nil {
			return fmt.Errorf("Secret %s/kubeconfig-%s: %w", ns, name, err)
		}
		if s.Labels["liqo.io/identity-type"] != "ControlPlane" || s.Labels["liqo.io/remote-cluster-id"] != providerID ||
			s.Annotations["liqo.io/remote-tenant-namespace"] != remoteNS {
			return fmt.Errorf("unexpected Secret labels %v annotations %v", s.Labels, s.Annotations)
		}
		if !strings.Contains(string(s.Data["kubeconfig"]), marker) {
			return fmt.Errorf("Secret's kubeconfig lacks %q:\n%s", marker, s.Data["kubeconfig"])
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != id.UID {
			return fmt.Errorf("Secret not owned by the Identity: %+v", s.OwnerReferences)
		}
		return nil
	}
}

func TestAccIdentity(t *testing.T) {
	const addr, ns = "liqo_identity.id", "liqo-tenant-idacc"
	secret1, secret2, secret3 := "token-first-7f3a9c", "token-second-41be02", "token-third-9d0c11"
	noSecret := func(secrets ...string) ([]plancheck.PlanCheck, []statecheck.StateCheck) {
		var p []plancheck.PlanCheck
		var s []statecheck.StateCheck
		for _, x := range secrets {
			p = append(p, authSecretAbsentFromPlan{x})
			s = append(s, authSecretAbsentFromState{x})
		}
		return p, s
	}
	plan1, state1 := noSecret(secret1)
	plan2, state2 := noSecret(secret1, secret2)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		CheckDestroy: func(s *terraform.State) error {
			for _, n := range []string{"controlplane-idacc-provider", "controlplane-idacc-provider2"} {
				err := cluster("consumer").Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: n}, &authv1beta1.Identity{})
				if !apierrors.IsNotFound(err) {
					return fmt.Errorf("Identity %s/%s still exists: %w", ns, n, err)
				}
			}
			return checkNamespaceGone("consumer", ns)(s)
		},
		Steps: []resource.TestStep{
			{
				Config: identityConfig("idacc-provider", "liqo-tenant-cl-consumer", identityWO(secret1, 1)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: append(plan1,
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("name"), knownvalue.StringExact("controlplane-idacc-provider")),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("secret_name"), knownvalue.StringExact("kubeconfig-controlplane-idacc-provider")),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("kubeconfig_wo"), knownvalue.Null()),
				)},
				ConfigStateChecks: append(state1,
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("consumer/"+ns+"/controlplane-idacc-provider")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("type"), knownvalue.StringExact("ControlPlane")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("api_server"), knownvalue.StringExact("https://provider.example:6443")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("kubeconfig_wo"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("kubeconfig"), knownvalue.Null()),
				),
				Check: checkIdentityObjects(ns, "controlplane-idacc-provider", "idacc-provider", "liqo-tenant-cl-consumer", secret1),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           "consumer/" + ns + "/controlplane-idacc-provider",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts", "kubeconfig_wo", "kubeconfig_wo_version"},
			},
			{
				// In place: a new kubeconfig (new version) and another remote tenant namespace.
				Config: identityConfig("idacc-provider", "liqo-tenant-other", identityWO(secret2, 2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: append(plan2,
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				)},
				ConfigStateChecks: state2,
				Check:             checkIdentityObjects(ns, "controlplane-idacc-provider", "idacc-provider", "liqo-tenant-other", secret2),
			},
			{
				// The Secret's content changed out of band: only a hash of the written value is kept,
				// and the plan writes the configured value again.
				PreConfig: func() {
					ctx := context.Background()
					s := &corev1.Secret{}
					key := client.ObjectKey{Namespace: ns, Name: "kubeconfig-controlplane-idacc-provider"}
					if err := cluster("consumer").Client.Get(ctx, key, s); err != nil {
						t.Fatal(err)
					}
					s.Data["kubeconfig"] = []byte(identityTestKubeconfig("tampered"))
					if err := cluster("consumer").Client.Update(ctx, s); err != nil {
						t.Fatal(err)
					}
				},
				Config: identityConfig("idacc-provider", "liqo-tenant-other", identityWO(secret2, 2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: append(plan2,
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				)},
				Check: checkIdentityObjects(ns, "controlplane-idacc-provider", "idacc-provider", "liqo-tenant-other", secret2),
			},
			{
				// Another provider: the API's clusterID is immutable, so the Identity is replaced.
				Config: identityConfig("idacc-provider2", "liqo-tenant-other", identityWO(secret2, 2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: append(plan2,
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("name"), knownvalue.StringExact("controlplane-idacc-provider2")),
				)},
				ConfigStateChecks: state2,
				Check: resource.ComposeTestCheckFunc(
					checkIdentityObjects(ns, "controlplane-idacc-provider2", "idacc-provider2", "liqo-tenant-other", secret2),
					func(*terraform.State) error {
						err := cluster("consumer").Client.Get(context.Background(),
							client.ObjectKey{Namespace: ns, Name: "kubeconfig-controlplane-idacc-provider"}, &corev1.Secret{})
						if !apierrors.IsNotFound(err) {
							return fmt.Errorf("old Secret left behind: %w", err)
						}
						return nil
					},
				),
			},
			{
				// Deleted outside Terraform: planned for re-creation.
				PreConfig: func() {
					deleteObjectOutOfBand(t, "consumer", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig-controlplane-idacc-provider2"}})
					deleteObjectOutOfBand(t, "consumer", &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "controlplane-idacc-provider2"}})
				},
				Config: identityConfig("idacc-provider2", "liqo-tenant-other", identityWO(secret2, 2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: append(plan2,
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				)},
				Check: checkIdentityObjects(ns, "controlplane-idacc-provider2", "idacc-provider2", "liqo-tenant-other", secret2),
			},
			{
				// Only the Secret deleted outside Terraform: an update writes it again.
				PreConfig: func() {
					deleteObjectOutOfBand(t, "consumer", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig-controlplane-idacc-provider2"}})
				},
				Config: identityConfig("idacc-provider2", "liqo-tenant-other", identityWO(secret2, 2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: append(plan2,
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				)},
				Check: checkIdentityObjects(ns, "controlplane-idacc-provider2", "idacc-provider2", "liqo-tenant-other", secret2),
			},
			{
				// Terraform < 1.11 style: the sensitive attribute. Its value is in the state (as documented).
				Config: identityConfig("idacc-provider2", "liqo-tenant-other", fmt.Sprintf("kubeconfig = %q", identityTestKubeconfig(secret3))),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectSensitiveValue(addr, tfjsonpath.New("kubeconfig")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectSensitiveValue(addr, tfjsonpath.New("kubeconfig")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("kubeconfig"), knownvalue.StringExact(identityTestKubeconfig(secret3))),
				},
				Check: checkIdentityObjects(ns, "controlplane-idacc-provider2", "idacc-provider2", "liqo-tenant-other", secret3),
			},
		},
	})
}

// TestAccIdentityInvalid: bad configurations fail at plan time with a clear message.
func TestAccIdentityInvalid(t *testing.T) {
	kc := identityTestKubeconfig("tok")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		Steps: []resource.TestStep{
			{
				Config:      identityConfig("idbad", "x", fmt.Sprintf("kubeconfig = %q\n  kubeconfig_wo = %q\n  kubeconfig_wo_version = 1", kc, kc)),
				ExpectError: regexp.MustCompile(`(?s)Invalid Attribute Combination.*kubeconfig`),
				PlanOnly:    true,
			},
			{
				Config:      identityConfig("idbad", "x", ""),
				ExpectError: regexp.MustCompile(`(?s)Exactly one of these attributes must be configured.*kubeconfig`),
				PlanOnly:    true,
			},
			{
				Config:      identityConfig("idbad", "x", fmt.Sprintf("kubeconfig_wo = %q", kc)),
				ExpectError: regexp.MustCompile(`(?s)kubeconfig_wo_version`),
				PlanOnly:    true,
			},
			{
				Config:      identityConfig("Bad_ID", "x", fmt.Sprintf("kubeconfig = %q", kc)),
				ExpectError: regexp.MustCompile(`must be a DNS label`),
				PlanOnly:    true,
			},
		},
	})
}
