package provider_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

// TestAccPeeringList: a peering made outside Terraform as `liqoctl peer --networking-disabled`
// makes it (internal/peering, which does what liqoctl does, asking for no resources in
// particular) is listed by the liqo_peering list resource, from the consumer's ForeignCluster,
// with liqo_peering's identity (the two keys of the clusters map) and a display name naming
// keys and cluster IDs; not in the other direction; with include_resource, with the state an
// import reads. A key outside the clusters map fails with the config attribute to fix. With the
// terraform CLI, `terraform query -generate-config-out` writes what imports it with no change
// (checkQueryGenerateConfig), and destroying the imported peering unpeers the clusters. Clusters
// running the real controller manager, no networking.
func TestAccPeeringList(t *testing.T) {
	const cid, pid = "lq-consumer", "lq-provider"
	e := peeringEnv(t, cid, pid)
	block := peeringClustersBlock(e, map[string]string{"consumer": cid, "provider": pid})
	side := func(id string) peering.Cluster { return peering.Cluster{Name: id, Client: e.Cluster(id).Client} }
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := peering.Peer(ctx, side(cid), side(pid), peering.Options{}); err != nil {
		t.Fatalf("peering as liqoctl does: %v", err)
	}
	identity := map[string]string{"consumer_cluster": "consumer", "provider_cluster": "provider"}
	const query = `
list "liqo_peering" "all" {
  provider = liqo
}

list "liqo_peering" "reverse" {
  provider = liqo
  config {
    consumer_cluster = "provider"
  }
}

list "liqo_peering" "with_state" {
  provider         = liqo
  include_resource = true
  config {
    clusters         = ["consumer", "provider"]
    provider_cluster = "provider"
  }
}
`
	known := func(path string, v knownvalue.Check) querycheck.KnownValueCheck {
		return querycheck.KnownValueCheck{Path: tfjsonpath.New(path), KnownValue: v}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{Config: block},
			{
				Query: true, Config: query,
				QueryResultChecks: []querycheck.QueryResultCheck{
					querycheck.ExpectLength("liqo_peering.all", 1),
					querycheck.ExpectIdentity("liqo_peering.all", identityValues(identity)),
					querycheck.ExpectResourceDisplayName("liqo_peering.all", queryfilter.ByResourceIdentity(identityValues(identity)),
						knownvalue.StringExact("consumer -> provider (lq-consumer -> lq-provider)")),
					querycheck.ExpectLength("liqo_peering.reverse", 0),
					querycheck.ExpectLength("liqo_peering.with_state", 1),
					querycheck.ExpectResourceKnownValues("liqo_peering.with_state", queryfilter.ByResourceIdentity(identityValues(identity)),
						[]querycheck.KnownValueCheck{
							known("id", knownvalue.StringExact("consumer/provider")),
							known("consumer_cluster_id", knownvalue.StringExact(cid)),
							known("provider_cluster_id", knownvalue.StringExact(pid)),
							known("networking", knownvalue.Bool(false)),
							known("virtual_node_name", knownvalue.StringExact(pid)),
							known("status", knownvalue.ObjectExact(map[string]knownvalue.Check{
								"networking": knownvalue.StringExact("Disabled"), "authentication": knownvalue.StringExact("Established"),
								"offloading": knownvalue.StringExact("Ready"),
							})),
						}),
				},
			},
			{
				Query:       true,
				Config:      "list \"liqo_peering\" \"x\" {\n  provider = liqo\n  config {\n    clusters = [\"consumer\", \"nowhere\"]\n  }\n}\n",
				ExpectError: regexp.MustCompile(`(?s)Listing peerings.*config.clusters: cluster "nowhere" is not a key of\s+the\s+provider's .clusters. map`),
			},
		},
	})
	checkQueryGenerateConfig(t, block, "list \"liqo_peering\" \"all\" {\n  provider = liqo\n}\n",
		[]identityCase{{addr: "liqo_peering.all", identity: identity}})
	if err := checkNothingLeft(e, cid, pid); err != nil {
		t.Error(err)
	}
}
