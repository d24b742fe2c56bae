package provider_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/peerkit/terraform-provider-liqo/controllers/offerpublication"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/contracttest"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// sliceOfferNS stands for both clusters' Liqo namespace in the slice offer test: the provider's
// offers, and each cluster's signing key for the contract stand-in.
const sliceOfferNS = "slice-offer-liqo"

// sliceOfferConfig: on the provider, the consumer cl-so-consumer's tenant namespace, identity
// and an offer made to it alone (cpu at 0.02, memory at 0.004 per GiB); on the consumer, its
// identity of cl-so-prov and a slice asking 2 CPUs and 4Gi on the offer under ceiling.
func sliceOfferConfig(ceiling string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_tenant_namespace" "p" {
  cluster           = "provider"
  remote_cluster_id = "cl-so-consumer"
}

resource "liqo_consumer_identity" "c" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.p.name
  consumer_cluster_id = "cl-so-consumer"
  validity_hours      = 24
}

resource "liqo_tenant_namespace" "c" {
  cluster           = "consumer"
  remote_cluster_id = "cl-so-prov"
}

resource "liqo_identity" "c" {
  cluster                 = "consumer"
  namespace               = liqo_tenant_namespace.c.name
  provider_cluster_id     = "cl-so-prov"
  remote_tenant_namespace = liqo_tenant_namespace.p.name
  kubeconfig_wo           = liqo_consumer_identity.c.kubeconfig
  kubeconfig_wo_version   = 1
}

resource "liqo_offer" "o" {
  cluster   = "provider"
  namespace = %[1]q
  name      = "slice-small"
  resources = { cpu = "4", memory = "8Gi" }
  currency  = "EUR"
  prices    = { cpu = { amount = "0.02" }, memory = { amount = "0.004", per = "1Gi" } }
  consumers = ["cl-so-consumer"]
}

resource "liqo_resource_slice" "s" {
  cluster             = "consumer"
  name                = "on-offer"
  namespace           = liqo_identity.c.namespace
  provider_cluster_id = "cl-so-prov"
  consumer_cluster_id = "cl-so-consumer"
  cpu                 = "2"
  memory              = "4Gi"
  offer               = { name = "slice-small", max_cost_per_hour = %[2]q, duration = "2h" }
  depends_on          = [liqo_offer.o]
}
`, sliceOfferNS, ceiling)
}

// sliceOfferKeys writes a signing key into each cluster's authentication-keys Secret in
// sliceOfferNS, as the controller managers would.
func sliceOfferKeys(t *testing.T) {
	t.Helper()
	for _, name := range []string{"consumer", "provider"} {
		nwTestNamespace(t, name, sliceOfferNS)
		key, err := signing.Generate()
		if err != nil {
			t.Fatal(err)
		}
		pem, err := key.EncodePrivate()
		if err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sliceOfferNS, Name: consts.SigningKeySecret},
			Data: map[string][]byte{consts.PrivateKeySecretKey: pem}}
		if err := cluster(name).Client.Create(context.Background(), s); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// sliceContract reads the slice's contract on the consumer (nil when there is none).
func sliceContract() (*marketv1alpha1.Contract, error) {
	c := &marketv1alpha1.Contract{}
	err := cluster("consumer").Client.Get(context.Background(), client.ObjectKey{Namespace: consts.TenantNamespace("cl-so-prov"), Name: "on-offer"}, c)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c, err
}

// TestAccResourceSliceOffer: liqo_resource_slice takes its quantities on an offer. The offer is
// published by the real publication controller; the contract is signed by
// contracttest.StartStandIn, a TEST STAND-IN for the contractsigning and contractacceptance
// controllers. Above the ceiling
// the create fails naming the cost and the fix, and neither slice nor contract is written;
// within it the contract is signed and the slice names it; destroy removes both.
func TestAccResourceSliceOffer(t *testing.T) {
	sliceOfferKeys(t)
	testenv.StartManager(t, cluster("provider"), func(mgr manager.Manager) error {
		return (&offerpublication.Reconciler{Client: mgr.GetClient(), LiqoNamespace: sliceOfferNS}).SetupWithManager(mgr)
	})
	contracttest.StartStandIn(t, cluster("consumer").Client, cluster("provider").Client, sliceOfferNS, consts.TenantNamespace("cl-so-prov"), nil)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(*terraform.State) error {
			if c, err := sliceContract(); err != nil {
				return err
			} else if c != nil {
				return fmt.Errorf("contract %s/%s left after destroy", c.Namespace, c.Name)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				// 2 × 0.02 + 4 × 0.004 = 0.056 EUR per hour.
				Config: sliceOfferConfig("0.05"),
				ExpectError: spaced("offer slice-small of cl-so-prov costs 0.056 EUR per hour for cpu=2,memory=4Gi, above the " +
					"ceiling max_cost_per_hour = 0.05"),
			},
			{
				PreConfig: func() {
					if c, err := sliceContract(); c != nil || err != nil {
						t.Errorf("a contract was written above the ceiling: %v, %v", c, err)
					}
				},
				Config: sliceOfferConfig("0.056"),
				Check: func(*terraform.State) error {
					c, err := sliceContract()
					if err != nil {
						return err
					}
					if c == nil || c.Status.Phase != marketv1alpha1.ContractSigned || c.Spec.Terms.ConsumerClusterID != "cl-so-consumer" {
						return errors.New("the slice's contract is not signed by cl-so-consumer")
					}
					rs, err := getResourceSlice(context.Background(), "consumer", c.Namespace, "on-offer")
					if err != nil {
						return err
					}
					if rs.Annotations[consts.ContractAnnotation] != "on-offer" {
						return fmt.Errorf("slice annotations %v: want %s=on-offer", rs.Annotations, consts.ContractAnnotation)
					}
					return nil
				},
			},
		},
	})
}
