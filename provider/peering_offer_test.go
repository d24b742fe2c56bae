package provider_test

import (
	"bytes"
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
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

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
		return checkProviderContract(e, cid, pid, c)
	}
}

// checkProviderContract checks, on the provider, that its own copy of the consumer's contract c
// holds the same terms, that both copies' signatures verify with the two clusters' keys, and
// that the provider's copy of the slice is granted the contract's resources.
func checkProviderContract(e *testenv.Env, cid, pid string, c *marketv1alpha1.Contract) error {
	ctx := context.Background()
	prov := e.Cluster(pid).Client
	own := &marketv1alpha1.Contract{}
	if err := prov.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ProviderContractName(cid, c.Name)}, own); err != nil {
		return fmt.Errorf("the provider's own copy of the contract: %w", err)
	}
	consumerKey, err := signing.ReadClusterKey(ctx, e.Cluster(cid).Client, consts.LiqoNamespace)
	if err != nil {
		return err
	}
	providerKey, err := signing.ReadClusterKey(ctx, prov, consts.LiqoNamespace)
	if err != nil {
		return err
	}
	for _, copy := range []*marketv1alpha1.Contract{c, own} {
		if err := contract.VerifyBoth(copy, consumerKey.Public, providerKey.Public); err != nil {
			return fmt.Errorf("contract %s/%s: %w", copy.Namespace, copy.Name, err)
		}
	}
	if !bytes.Equal(contract.Canonical(&own.Spec.Terms), contract.Canonical(&c.Spec.Terms)) || own.Status.Phase != marketv1alpha1.ContractSigned {
		return fmt.Errorf("the provider's copy (%s) holds other terms than the consumer's, or is not Signed", own.Status.Phase)
	}
	slice := &authv1beta1.ResourceSlice{}
	if err := prov.Get(ctx, client.ObjectKey{Namespace: consts.TenantNamespace(cid), Name: c.Name}, slice); err != nil {
		return fmt.Errorf("the provider's copy of the slice: %w", err)
	}
	for name, want := range c.Spec.Terms.Resources {
		if got := slice.Status.Resources[name]; got.Cmp(want) != 0 {
			return fmt.Errorf("the provider granted %s %s, want the contract's %s (grant %v)", name, got.String(), want.String(), slice.Status.Resources)
		}
	}
	return nil
}

// TestAccPeeringOffer: liqo_peering takes its resources on a provider's offer, end to end
// through the real controller managers of both clusters: the provider publishes the offer to
// the consumer, the consumer's manager signs the contract liqo_peering writes and replicates
// it, the provider's checks it against the offer, countersigns it and keeps its copy, and the
// slice is granted what the contract says. An offer costing more than the ceiling is refused at
// apply with the cost and the fix, and no contract is written; within it the contract is
// written, signed by both (each signature verified), named by the slice, the slice granted its
// resources, and read by liqo_contract; a new duration renews it in place (same start, new
// end); more than the offer allows fails the apply, naming the offer's bound, and the running
// contract stays; destroy removes it with the slice, on both clusters.
func TestAccPeeringOffer(t *testing.T) {
	const cid, pid = "cl-consumer", "cl-provider"
	e := peeringEnv(t, cid, pid)
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
				// 5 × 0.04 + 4 × 0.005 = 0.22 EUR per hour, within the ceiling; 5 CPUs are more than
				// offered: refused at apply, before the contract is rewritten (the provider would
				// refuse the same: TestContractFlow), the running contract kept.
				Config: peeringOfferConfig(block, "5", "0.30", "48h", false),
				ExpectError: spaced("accepting offer small: the terms are not the offer's: " +
					"spec.terms.resources[cpu]: 5 is above the 4 the offer allows: ask for less"),
			},
			{
				Config: peeringOfferConfig(block, "2", "0.10", "48h", true),
				Check: resource.ComposeTestCheckFunc(checkPeeringContract(e, cid, pid, "2", 48*time.Hour),
					resource.TestCheckResourceAttr(ds, "phase", "Signed")),
			},
		},
	})
}
