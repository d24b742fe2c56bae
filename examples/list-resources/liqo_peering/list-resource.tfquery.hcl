# Every peering between clusters of the provider's `clusters` map, whoever made it (Terraform or
# `liqoctl peer`). `terraform query -generate-config-out=peerings.tf` writes an import block (by
# identity) and a liqo_peering for each; the next plan imports them with no change.
list "liqo_peering" "all" {
  provider = liqo
}

# The peerings in which "hub" consumes, looking only in three clusters of the map, with their
# state (module status, virtual node, granted resources).
list "liqo_peering" "from_hub" {
  provider         = liqo
  include_resource = true

  config {
    clusters         = ["hub", "edge-1", "edge-2"]
    consumer_cluster = "hub"
  }
}
