package provider_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/contractstandin"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// standInRefusal is the reason the contract stand-in refuses 3 CPUs with.
const standInRefusal = "spec.terms.resources[cpu]: 3 is above what offer small has left (other contracts take 2): ask for at most 2"

// spaced matches s in terraform's output, which wraps lines where s has spaces.
func spaced(s string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(s), " ", `\s+`))
}

// peeringOfferConfig is a provider's offer (cpu at 0.04, memory at 0.005 per GiB, pods free)
// and a peering asking cpu, 4Gi and 20 pods on it with a ceiling and, unless "", a duration;
// with read, the liqo_contract of the peering.
func peeringOfferConfig(block, cpu, ceiling, duration string, read bool) string {
	offer := fmt.Sprintf("offer = { name = \"small\", max_cost_per_hour = %q }", ceiling)
	if duration != "" {
		offer = fmt.Sprintf("offer = { name = \"small\", max_cost_per_hour = %q, duration = %q }", ceiling, duration)
	}
	if ceiling == "" {
		offer = ""
	}
	cfg := block + fmt.Sprintf(`
resource "liqo_offer" "small" {
  cluster      = "provider"
  name         = "small"
  resources    = { cpu = "4", memory = "8Gi", pods = "110" }
  currency     = "EUR"
  prices       = { cpu = { amount = "0.04" }, memory = { amount = "0.005", per = "1Gi" } }
  min_duration = "1h"
}

resource "liqo_peering" "this" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  networking       = false
  cpu              = %q
  memory           = "4Gi"
  pods             = "20"
  %s
  depends_on = [liqo_offer.small]
}
`, cpu, offer)
	if read {
		cfg += `
data "liqo_contract" "this" {
  cluster             = "consumer"
  provider_cluster_id = liqo_peering.this.provider_cluster_id
}
`
	}
	return cfg
}

// peeringContract reads the consumer's Contract of the peering (nil when there is none).
func peeringContract(e *testenv.Env, cid, pid string) (*marketv1alpha1.Contract, error) {
	c := &marketv1alpha1.Contract{}
	err := e.Cluster(cid).Client.Get(context.Background(), client.ObjectKey{Namespace: consts.TenantNamespace(pid), Name: pid}, c)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c, err
}

// checkPeeringContract checks that the peering's Contract is signed for cpu and lasts d, and
// that the slice names it.
func checkPeeringContract(e *testenv.Env, cid, pid, cpu string, d time.Duration) resource.TestCheckFunc {
	return func(*terraform.State) error {
		c, err := peeringContract(e, cid, pid)
		if err != nil {
			return fmt.Errorf("contract of the peering: %w", err)
		}
		if c == nil {
			return errors.New("the peering has no contract")
		}
		q := c.Spec.Terms.Resources[corev1.ResourceCPU]
		if c.Status.Phase != marketv1alpha1.ContractSigned || q.String() != cpu || c.Spec.Terms.End.Sub(c.Spec.Terms.Start.Time) != d ||
			c.Labels[consts.RemoteClusterIDLabel] != pid || c.Labels[consts.ReplicationLabel] != "true" || c.Spec.Terms.OfferName != "small" {
			return fmt.Errorf("contract: phase %s, cpu %s, %s to %s, labels %v; want Signed, cpu %s, lasting %s", c.Status.Phase, q.String(),
				c.Spec.Terms.Start, c.Spec.Terms.End, c.Labels, cpu, d)
		}
		slice := &authv1beta1.ResourceSlice{}
		if err := e.Cluster(cid).Client.Get(context.Background(), client.ObjectKey{Namespace: c.Namespace, Name: pid}, slice); err != nil {
			return err
		}
		if slice.Annotations[consts.ContractAnnotation] != pid {
			return fmt.Errorf("slice annotations %v: want %s=%s", slice.Annotations, consts.ContractAnnotation, pid)
		}
		return nil
	}
}

// TestAccPeeringOffer: liqo_peering takes its resources on a provider's offer. The clusters run
// the real controller managers (offers published to the consumer, the slice granted); the
// contract is signed by contractstandin, a TEST STAND-IN for the contractsigning and
// contractacceptance controllers, which refuses 3 CPUs. An offer costing more than the ceiling
// is refused at apply with the cost and the fix, and no contract is written; within it the
// contract is written, signed, named by the slice and read by liqo_contract; a new duration
// renews it in place (same start, new end); a refusal fails the apply with the provider's
// reason; destroy removes it with the slice.
func TestAccPeeringOffer(t *testing.T) {
	const cid, pid = "cl-consumer", "cl-provider"
	e := peeringEnv(t, cid, pid)
	contractstandin.Start(t, e.Cluster(cid).Client, e.Cluster(pid).Client, consts.LiqoNamespace, consts.TenantNamespace(pid),
		func(terms *marketv1alpha1.ContractTerms) string {
			if q := terms.Resources[corev1.ResourceCPU]; q.String() == "3" {
				return standInRefusal
			}
			return ""
		})
	block := peeringClustersBlock(e, map[string]string{"consumer": cid, "provider": pid})
	const res, ds = "liqo_peering.this", "data.liqo_contract.this"
	var start time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(*terraform.State) error {
			if c, err := peeringContract(e, cid, pid); err != nil {
				return err
			} else if c != nil {
				return fmt.Errorf("contract %s/%s left after destroy", c.Namespace, c.Name)
			}
			return checkNothingLeft(e, cid, pid)
		},
		Steps: []resource.TestStep{
			{Config: peeringOfferConfig(block, "2", "", "", false)},
			{
				// 2 × 0.04 + 4 × 0.005 = 0.10 EUR per hour.
				Config: peeringOfferConfig(block, "2", "0.05", "", false),
				ExpectError: spaced("offer small of cl-provider costs 0.1 EUR per hour for cpu=2,memory=4Gi,pods=20, above the ceiling " +
					"max_cost_per_hour = 0.05: raise max_cost_per_hour to at least 0.1, ask for fewer resources, or choose a cheaper offer " +
					"(data liqo_offers lists them); no contract was written"),
			},
			{
				PreConfig: func() {
					if c, err := peeringContract(e, cid, pid); c != nil || err != nil {
						t.Errorf("a contract was written above the ceiling: %v, %v", c, err)
					}
				},
				Config: peeringOfferConfig(block, "2", "0.10", "", true),
				Check: resource.ComposeTestCheckFunc(checkPeeringContract(e, cid, pid, "2", time.Hour),
					resource.TestCheckResourceAttr(ds, "phase", "Signed"),
					resource.TestCheckResourceAttr(ds, "offer_name", "small"),
					resource.TestCheckResourceAttr(ds, "currency", "EUR"),
					resource.TestCheckResourceAttr(ds, "resources.cpu", "2"),
					resource.TestCheckResourceAttr(ds, "prices.memory.per", "1Gi"),
					resource.TestCheckResourceAttr(ds, "prices.pods.amount", "0"),
					resource.TestCheckResourceAttr(ds, "consumer_signed", "true"),
					resource.TestCheckResourceAttr(ds, "provider_signed", "true"),
					func(*terraform.State) error {
						c, err := peeringContract(e, cid, pid)
						if err == nil {
							start = c.Spec.Terms.Start.Time
						}
						return err
					}),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: peeringOfferConfig(block, "2", "0.10", "48h", true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate)}},
				Check: resource.ComposeTestCheckFunc(checkPeeringContract(e, cid, pid, "2", 48*time.Hour),
					resource.TestCheckResourceAttr(ds, "phase", "Signed"),
					func(*terraform.State) error {
						c, err := peeringContract(e, cid, pid)
						if err != nil {
							return err
						}
						if c == nil || !c.Spec.Terms.Start.Time.Equal(start) {
							return fmt.Errorf("renewal moved the start (was %s): %+v", start, c)
						}
						return nil
					}),
			},
			{
				Config:      peeringOfferConfig(block, "3", "0.20", "48h", false),
				ExpectError: spaced("provider cl-provider refused contract liqo-tenant-cl-provider/cl-provider on offer small: " + standInRefusal),
			},
		},
	})
}
