package provider_test

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// TestAccPeeringIdentity: liqo_peering's identity is its two clusters; it is in the state after
// create and the peering can be imported by it, with a plan that changes nothing; an identity
// that names no peering (the clusters swapped) or the same cluster twice fails the import. With
// the terraform CLI, `terraform plan -generate-config-out` writes a configuration that then plans
// no change (checkGenerateConfig). Clusters running the real controller manager, no networking.
func TestAccPeeringIdentity(t *testing.T) {
	const cid, pid = "cl-consumer", "cl-provider"
	e := peeringEnv(t, cid, pid)
	block := peeringClustersBlock(e, map[string]string{"consumer": cid, "provider": pid})
	const peering = `
resource "liqo_peering" "this" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  networking       = false
  cpu              = "2"
  memory           = "4Gi"
  pods             = "20"
}
`
	c := identityCase{addr: "liqo_peering.this", identity: map[string]string{"consumer_cluster": "consumer", "provider_cluster": "provider"}}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             func(*terraform.State) error { return checkNothingLeft(e, cid, pid) },
		Steps: []resource.TestStep{
			{Config: block + peering, ConfigStateChecks: []statecheck.StateCheck{c.expectIdentity()}},
			c.importStep(),
			{
				// The other direction: no such peering.
				Config:       block + peering + importBlock(c.addr, map[string]string{"consumer_cluster": "provider", "provider_cluster": "consumer"}),
				ResourceName: c.addr, ImportState: true, ImportStateKind: resource.ImportBlockWithResourceIdentity,
				ImportStateConfigExact: true, ExpectError: regexp.MustCompile(`Cannot import non-existent remote object`),
			},
			c.wrongImportStep(block+peering, "provider_cluster", "consumer", regexp.MustCompile(`names the same cluster twice`)),
		},
	})
	checkGenerateConfig(t, block, peering, []identityCase{c}, nil)
	if err := checkNothingLeft(e, cid, pid); err != nil {
		t.Error(err)
	}
}
