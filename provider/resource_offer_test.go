package provider_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/peerkit/terraform-provider-liqo/controllers/offerpublication"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// offerAccNS stands for the provider's Liqo namespace in the offer tests (its own, so that the
// publication controller they run touches no other test's objects).
const offerAccNS = "offers-acc"

// offerAccConfig: on the provider, the tenant namespaces and credentials of two consumers
// (cl-offer-a, cl-offer-b), an offer for all at cpuPrice and one for cl-offer-b only; on the
// consumer cluster, each consumer's identity of the provider (cl-offer-prov) in a namespace of its
// own; with reads, each consumer's liqo_offers.
func offerAccConfig(cpuPrice string, reads bool) string {
	cfg := providerBlock()
	for _, who := range []string{"a", "b"} {
		cfg += fmt.Sprintf(`
resource "liqo_tenant_namespace" "%[1]s" {
  cluster           = "provider"
  remote_cluster_id = "cl-offer-%[1]s"
}

resource "liqo_consumer_identity" "%[1]s" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.%[1]s.name
  consumer_cluster_id = "cl-offer-%[1]s"
  validity_hours      = 24
}

resource "liqo_tenant_namespace" "on_consumer_%[1]s" {
  cluster           = "consumer"
  name              = "offers-%[1]s-prov"
  remote_cluster_id = "cl-offer-prov"
}

resource "liqo_identity" "%[1]s" {
  cluster                 = "consumer"
  namespace               = liqo_tenant_namespace.on_consumer_%[1]s.name
  provider_cluster_id     = "cl-offer-prov"
  remote_tenant_namespace = liqo_tenant_namespace.%[1]s.name
  kubeconfig_wo           = liqo_consumer_identity.%[1]s.kubeconfig
  kubeconfig_wo_version   = 1
}
`, who)
		if reads {
			cfg += fmt.Sprintf(`
data "liqo_offers" "%[1]s" {
  cluster             = "consumer"
  provider_cluster_id = "cl-offer-prov"
  namespace           = liqo_identity.%[1]s.namespace
}
`, who)
		}
	}
	return cfg + fmt.Sprintf(`
resource "liqo_offer" "all" {
  cluster   = "provider"
  namespace = %[1]q
  name      = "acc-all"
  resources = { cpu = "4", memory = "8192Mi", "nvidia.com/gpu" = "1" }
  currency  = "EUR"
  prices = {
    cpu              = { amount = %[2]q }
    memory           = { amount = "0.004", per = "1Gi" }
    "nvidia.com/gpu" = { amount = "1.5" }
  }
  minimum      = { cpu = "1" }
  maximum      = { cpu = "2" }
  min_duration = "1h"
  max_duration = "720h"
}

resource "liqo_offer" "b_only" {
  cluster   = "provider"
  namespace = %[1]q
  name      = "acc-b-only"
  resources = { cpu = "8" }
  currency  = "USD"
  prices    = { cpu = { amount = "0.01" } }
  consumers = ["cl-offer-b"]
}
`, offerAccNS, cpuPrice)
}

// offerAccPublished waits until the publication controller copied the offers to the consumers.
func offerAccPublished(t *testing.T, want map[string]int) {
	t.Helper()
	testenv.EventuallyOK(t, "offers published", time.Minute, func() error {
		for consumer, n := range want {
			list := &marketv1alpha1.OfferList{}
			if err := cluster("provider").Client.List(context.Background(), list, client.InNamespace(consts.TenantNamespace(consumer))); err != nil {
				return err
			}
			if len(list.Items) != n {
				return fmt.Errorf("%d offers published to %s, want %d", len(list.Items), consumer, n)
			}
		}
		return nil
	})
}

// checkOfferPrice checks the cpu price of the Offer acc-all on the provider.
func checkOfferPrice(want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		o := &marketv1alpha1.Offer{}
		if err := cluster("provider").Client.Get(context.Background(), client.ObjectKey{Namespace: offerAccNS, Name: "acc-all"}, o); err != nil {
			return fmt.Errorf("Offer %s/acc-all: %w", offerAccNS, err)
		}
		if got := o.Spec.Prices["cpu"].Amount; got != want || o.Spec.Currency != "EUR" || o.Spec.MaxDuration.Duration != 720*time.Hour {
			return fmt.Errorf("Offer %s/acc-all: cpu price %s, currency %s, maxDuration %v; want %s, EUR, 720h", offerAccNS, got,
				o.Spec.Currency, o.Spec.MaxDuration, want)
		}
		return nil
	}
}

// TestAccOffer: a provider declares two offers (liqo_offer), one for all and one for a single
// consumer; its controller manager publishes them; each consumer reads, with its own identity,
// the offers made to it (liqo_offers) and no other; a price changes in place; an offer imports,
// and one deleted out of band is planned again.
func TestAccOffer(t *testing.T) {
	nwTestNamespace(t, "provider", offerAccNS)
	testenv.StartManager(t, cluster("provider"), func(mgr manager.Manager) error {
		return (&offerpublication.Reconciler{Client: mgr.GetClient(), LiqoNamespace: offerAccNS}).SetupWithManager(mgr)
	})
	const all, bOnly, a, b = "liqo_offer.all", "liqo_offer.b_only", "data.liqo_offers.a", "data.liqo_offers.b"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		Steps: []resource.TestStep{
			{
				Config: offerAccConfig("0.02", false),
				Check: resource.ComposeTestCheckFunc(checkOfferPrice("0.02"),
					resource.TestCheckResourceAttr(all, "id", "provider/"+offerAccNS+"/acc-all"),
					resource.TestCheckResourceAttr(all, "resources.memory", "8192Mi")),
			},
			{
				PreConfig: func() { offerAccPublished(t, map[string]int{"cl-offer-a": 1, "cl-offer-b": 2}) },
				Config:    offerAccConfig("0.02", true),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(a, "remote_namespace", consts.TenantNamespace("cl-offer-a")),
					resource.TestCheckResourceAttr(a, "offers.#", "1"),
					resource.TestCheckResourceAttr(a, "offers.0.name", "acc-all"),
					resource.TestCheckResourceAttr(a, "offers.0.currency", "EUR"),
					resource.TestCheckResourceAttr(a, "offers.0.prices.cpu.amount", "0.02"),
					resource.TestCheckResourceAttr(a, "offers.0.prices.memory.per", "1Gi"),
					resource.TestCheckResourceAttr(a, "offers.0.resources.memory", "8Gi"),
					resource.TestCheckResourceAttr(a, "offers.0.maximum.cpu", "2"),
					resource.TestCheckResourceAttr(a, "offers.0.max_duration", "720h0m0s"),
					resource.TestCheckResourceAttr(b, "offers.#", "2"),
					resource.TestCheckResourceAttr(b, "offers.1.name", "acc-b-only"),
					resource.TestCheckResourceAttr(b, "offers.1.currency", "USD"),
					resource.TestCheckResourceAttr(b, "offers.1.resources.cpu", "8")),
			},
			{ResourceName: bOnly, ImportState: true, ImportStateId: "provider/" + offerAccNS + "/acc-b-only", ImportStateVerify: true},
			{
				Config: offerAccConfig("0.03", true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(all, plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction(bOnly, plancheck.ResourceActionNoop),
				}},
				Check: checkOfferPrice("0.03"),
			},
			{
				PreConfig: func() {
					nwDeleteOutOfBand(t, "provider", &marketv1alpha1.Offer{ObjectMeta: metav1.ObjectMeta{Namespace: offerAccNS, Name: "acc-b-only"}})
				},
				Config: offerAccConfig("0.03", false),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(bOnly, plancheck.ResourceActionCreate),
				}},
			},
		},
	})
}

// TestAccOfferInvalid: a bad offer is refused at plan, naming the attribute and what is wrong.
func TestAccOfferInvalid(t *testing.T) {
	offer := func(body string) string {
		return providerBlock() + fmt.Sprintf(`
resource "liqo_offer" "o" {
  cluster   = "provider"
  name      = "bad"
  %s
}
`, body)
	}
	for i, tc := range []struct{ body, want string }{
		{`resources = { cpu = "4 cores" }`, `"4 cores" is not a Kubernetes quantity`},
		{`resources = { cpu = "-4" }`, `"-4" is negative`},
		{`resources = { "no/such/name" = "1" }`, `Invalid resource name`},
		{`resources = { cpu = "4" }
  currency = "EUR"
  prices = { cpu = { amount = "-0.5" } }`, `"-0.5" is not a non-negative decimal`},
		{`resources = { cpu = "4" }
  currency = "EUR"
  prices = { cpu = { amount = "cheap" } }`, `Invalid price`},
		{`resources = { cpu = "4" }
  currency = "XYZ"`, `"XYZ" is not an ISO 4217 code`},
		{`resources = { cpu = "4" }
  prices = { cpu = { amount = "1" } }`, `prices need a currency`},
		{`resources = { cpu = "4" }
  maximum = { cpu = "8" }`, `spec.maximum[cpu]: 8 is above the 4 offered`},
		{`resources = { cpu = "4" }
  currency = "EUR"
  prices = { memory = { amount = "1" } }`, `spec.prices[memory]: the resource is not offered`},
		{`resources = { cpu = "4" }
  min_duration = "2h"
  max_duration = "1h"`, `spec.minDuration 2h0m0s is above spec.maxDuration 1h0m0s`},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, Steps: []resource.TestStep{
				{Config: offer(tc.body), PlanOnly: true, ExpectError: offWrappedText(tc.want)},
			}})
		})
	}
}

// TestAccOfferExample plans the documentation's example of liqo_offer against the test
// clusters, so that it stays valid as the schema changes.
func TestAccOfferExample(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "examples", "resources", "liqo_offer", "resource.tf"))
	if err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, Steps: []resource.TestStep{
		{Config: providerBlock() + string(src), PlanOnly: true, ExpectNonEmptyPlan: true},
	}})
}

// TestAccOfferUnknownPrice: a price known only at apply (from another resource) is not refused
// at plan for being empty: the offer is checked whole once every term is known.
func TestAccOfferUnknownPrice(t *testing.T) {
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, Steps: []resource.TestStep{{
		Config: providerBlock() + `
resource "terraform_data" "price" {
  input = "0.5"
}

resource "liqo_offer" "o" {
  cluster   = "provider"
  name      = "later"
  resources = { cpu = "4" }
  currency  = "EUR"
  prices    = { cpu = { amount = terraform_data.price.output } }
}
`,
		PlanOnly: true, ExpectNonEmptyPlan: true,
	}}})
}
