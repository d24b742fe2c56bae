# Unit tests of the fleet example (the fleet module over a map of kubeconfigs) with a mocked
# liqo provider: no cluster is reached, so they run anywhere with `terraform init` (or
# `terraform get`, for the local module) then `terraform test` in the example's folder. The
# mocked provider serves the module too. The module's own tests, its input validations
# included, are in ../modules/fleet/tests (expect_failures names only objects of the root
# module, so a validation failing inside a module cannot be expected from here).

mock_provider "liqo" {
  # A cluster ID the providers' offers are read by (a mocked random string is no DNS label).
  mock_data "liqo_cluster" {
    defaults = { cluster_id = "cl-mocked" }
  }
}

variables {
  kubeconfigs = {
    consumer   = "not-read/consumer.kubeconfig"
    provider   = "not-read/provider.kubeconfig"
    provider-2 = "not-read/provider-2.kubeconfig"
  }
}

run "the_consumer_consumes_from_each_provider" {
  assert {
    condition     = keys(module.fleet.peerings) == ["consumer/provider", "consumer/provider-2"]
    error_message = "by default the consumer is the hub and consumes from the other clusters"
  }
  assert {
    condition     = output.peerings == module.fleet.peerings
    error_message = "output peerings must be the module's"
  }
}

run "full_mesh" {
  variables {
    topology = "full-mesh"
  }

  assert {
    condition     = length(output.peerings) == 6
    error_message = "a full mesh of the three clusters has six peerings"
  }
}

run "placement_by_price_reads_each_members_cluster_id" {
  command = plan

  variables {
    max_cost_per_hour = "1.00"
  }

  override_module {
    target  = module.fleet.module.placement
    outputs = { placed = { "consumer/provider-2" = { offer = "small", cost_per_hour = 0.2 } }, unplaced = [] }
  }

  assert {
    condition     = keys(data.liqo_cluster.member) == ["consumer", "provider", "provider-2"]
    error_message = "each member's cluster ID is read, to read the offers made to the consumer"
  }
}
