# Placement by price (variable placement) with a mocked liqo provider, so no cluster is reached:
# the fleet's wiring of the choice into its peerings, with the choice (the placement submodule,
# tested by placement_choice.tftest.hcl) overridden, as terraform test cannot override the
# nested list of data "liqo_offers" (hashicorp/terraform#38369).

mock_provider "liqo" {}

run "the_fleet_peers_on_the_choice" {
  command = plan

  variables {
    members   = ["app", "p1", "p2", "p3"]
    hub       = "app"
    placement = { max_cost_per_hour = "0.50", duration = "48h", cluster_ids = { app = "cl-app", p1 = "cl-p1", p2 = "cl-p2", p3 = "cl-p3" } }
  }

  override_module {
    target  = module.placement
    outputs = { placed = { "app/p3" = { offer = "small", cost_per_hour = 0.1 } }, unplaced = [] }
  }

  assert {
    condition     = keys(liqo_peering.this) == ["app/p3"]
    error_message = "the app peers only with the provider chosen"
  }
  assert {
    condition     = liqo_peering.this["app/p3"].offer == { name = "small", max_cost_per_hour = "0.50", duration = "48h" }
    error_message = "the peering accepts the offer chosen, with the fleet's ceiling and duration"
  }
  assert {
    condition     = length(data.liqo_offers.candidate) == 3 && data.liqo_offers.candidate["app/p2"].provider_cluster_id == "cl-p2"
    error_message = "the offers of each candidate provider are read by its cluster ID"
  }
}

run "an_unplaced_consumer_fails_the_plan" {
  command = plan

  variables {
    members   = ["app", "p1"]
    hub       = "app"
    placement = { max_cost_per_hour = "0.01", cluster_ids = { app = "cl-app", p1 = "cl-p1" } }
  }

  override_module {
    target  = module.placement
    outputs = { placed = {}, unplaced = ["app"] }
  }

  expect_failures = [output.placement]
}

run "without_placement_every_peering_and_no_offer" {
  command = plan

  variables {
    members = ["app", "p1", "p2"]
    hub     = "app"
  }

  assert {
    condition     = length(liqo_peering.this) == 2 && alltrue([for p in liqo_peering.this : p.offer == null])
    error_message = "without placement the hub consumes from every spoke, on no offer"
  }
}
