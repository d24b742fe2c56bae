# Unit tests of the tethered example with a mocked liqo provider: no cluster is reached, so they
# run anywhere with `terraform test` in the example's folder (Terraform >= 1.7).

mock_provider "liqo" {
  mock_resource "liqo_peering" {
    defaults = { provider_cluster_id = "foreign-id", virtual_node_name = "virtual-node" }
  }
}

run "tethered_peers_both_ways_and_tethers_the_home" {
  command = apply

  assert {
    condition     = length(liqo_tethering.home) == 1 && liqo_tethering.home[0].cluster == "home"
    error_message = "tethered mode tethers the home cluster"
  }
  assert {
    condition     = liqo_tethering.home[0].foreign_cluster_id == liqo_peering.home_on_foreign.provider_cluster_id
    error_message = "the home is tethered to the cluster it runs its workloads on"
  }
  assert {
    condition = (liqo_peering.foreign_on_home[0].consumer_cluster == liqo_peering.home_on_foreign.provider_cluster
    && liqo_peering.foreign_on_home[0].resource_slice_class == "tethered")
    error_message = "the foreign cluster uses the home's nodes through a slice of class tethered"
  }
}

run "autonomous_keeps_only_the_home_as_consumer" {
  command = plan

  variables {
    mode = "autonomous"
  }

  assert {
    condition     = length(liqo_tethering.home) == 0 && length(liqo_peering.foreign_on_home) == 0
    error_message = "autonomous mode has no tethering and no peering of the foreign cluster on the home"
  }
}

run "an_unknown_mode_is_refused" {
  command = plan

  variables {
    mode = "captive"
  }
  expect_failures = [var.mode]
}
