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
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// badPodSecurity is the plan-time refusal of a pod_security that is no Pod Security level.
var badPodSecurity = regexp.MustCompile(`(?s)pod_security.*value\s+must\s+be\s+one\s+of:\s+\["privileged"\s+"baseline"\s+"restricted"\],\s+got:\s+"root"`)

// tenantLevel checks the Pod Security annotation of a Tenant: absent when want is "".
func tenantLevel(c client.Client, namespace, name, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		tn := &authv1beta1.Tenant{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, tn); err != nil {
			return fmt.Errorf("reading Tenant %s/%s: %w", namespace, name, err)
		}
		got, ok := tn.Annotations[consts.TenantPodSecurityAnnotation]
		if got != want || ok != (want != "") {
			return fmt.Errorf("Tenant %s/%s: annotation %s=%q (set: %v), want %q", namespace, name, consts.TenantPodSecurityAnnotation, got, ok, want)
		}
		return nil
	}
}

// TestAccTenantPodSecurity: liqo_tenant's pod_security is checked at plan; it is kept as the
// Tenant's annotation, updated in place, read back on refresh and import (plans stay quiet),
// and removed when unset (the provider's default).
func TestAccTenantPodSecurity(t *testing.T) {
	const addr, ns, consumer = "liqo_tenant.t", "liqo-tenant-ps-acc", "ps-acc"
	cfg := func(extra string) string {
		return providerBlock() + fmt.Sprintf(`
resource "liqo_tenant_namespace" "ns" {
  cluster           = "provider"
  remote_cluster_id = %q
}

resource "liqo_tenant" "t" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.ns.name
  consumer_cluster_id = %q
  authz_policy        = "TolerateNoHandshake"
  %s
}
`, consumer, consumer, extra)
	}
	level := func(want string) resource.TestCheckFunc {
		return tenantLevel(cluster("provider").Client, ns, consumer, want)
	}
	inPlace := resource.ConfigPlanChecks{
		PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
		PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkNamespaceGone("provider", ns),
		Steps: []resource.TestStep{
			{Config: cfg(`pod_security = "root"`), PlanOnly: true, ExpectError: badPodSecurity},
			{
				Config: cfg(`pod_security = "privileged"`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("pod_security"), knownvalue.StringExact("privileged")),
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            level("privileged"),
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "provider/" + ns + "/" + consumer,
				ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{Config: cfg(`pod_security = "restricted"`), ConfigPlanChecks: inPlace, Check: level("restricted")},
			{
				Config: cfg(""), ConfigPlanChecks: inPlace, Check: level(""),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("pod_security"), knownvalue.Null())},
			},
		},
	})
}

// TestAccPeeringPodSecurity: liqo_peering's pod_security is checked at plan; the peering's
// Tenant on the provider carries it from the start; a change, or unsetting it, is an in-place
// update of the Tenant's annotation; import reads it back and the plans stay quiet.
func TestAccPeeringPodSecurity(t *testing.T) {
	const cid, pid = "cl-consumer", "cl-provider"
	e := peeringEnv(t, cid, pid)
	const res = "liqo_peering.this"
	const asked = "  cpu    = \"1\"\n  memory = \"2Gi\"\n  pods   = \"10\"\n"
	cfg := func(attrs string) string { return peeringOptionsConfig(e, cid, pid, asked+attrs) }
	level := func(want string) resource.TestCheckFunc {
		return tenantLevel(e.Cluster(pid).Client, "liqo-tenant-"+cid, cid, want)
	}
	inPlace := resource.ConfigPlanChecks{
		PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate)},
		PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             func(*terraform.State) error { return checkNothingLeft(e, cid, pid) },
		Steps: []resource.TestStep{
			{Config: cfg(`  pod_security = "root"`), PlanOnly: true, ExpectError: badPodSecurity},
			{
				Config: cfg(`  pod_security = "privileged"`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("pod_security"), knownvalue.StringExact("privileged")),
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            level("privileged"),
			},
			{Config: cfg(`  pod_security = "restricted"`), ConfigPlanChecks: inPlace, Check: level("restricted")},
			{
				Config: cfg(`  pod_security = "restricted"`), ResourceName: res, ImportState: true, ImportStateId: "consumer/provider",
				ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				Config: cfg(""), ConfigPlanChecks: inPlace, Check: level(""),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(res, tfjsonpath.New("pod_security"), knownvalue.Null())},
			},
		},
	})
}
