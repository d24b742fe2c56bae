# Unit tests of the fleet module with a mocked liqo provider: no cluster is reached, so they run
# anywhere with `terraform test` in the module's folder (Terraform >= 1.9 for the module's
# validations, >= 1.7 for mock_provider). They check which peerings each topology plans, that
# the inputs reach every peering, and that the module's variable validations reject bad inputs.
#
# The module has no provider block: the mocked provider stands for the caller's, whose clusters
# map would hold the members' keys.

mock_provider "liqo" {}

variables {
  members = ["hub", "edge-1", "edge-2"]
  hub     = "hub"
}

run "hub_and_spoke_the_hub_consumes" {
  command = plan

  assert {
    condition     = keys(liqo_peering.this) == ["hub/edge-1", "hub/edge-2"]
    error_message = "the hub consumes from each spoke: one peering per spoke, keyed <consumer>/<provider>"
  }
  assert {
    condition     = alltrue([for k, p in liqo_peering.this : k == "${p.consumer_cluster}/${p.provider_cluster}"])
    error_message = "each peering's key names its consumer and provider clusters"
  }
}

run "hub_and_spoke_the_spokes_consume" {
  command = plan

  variables {
    hub_consumes = false
  }

  assert {
    condition     = keys(liqo_peering.this) == ["edge-1/hub", "edge-2/hub"]
    error_message = "with hub_consumes = false each spoke consumes from the hub"
  }
}

run "full_mesh" {
  command = plan

  variables {
    topology = "full-mesh"
    hub      = null
  }

  assert {
    condition     = length(liqo_peering.this) == 6
    error_message = "a full mesh of 3 clusters has 6 peerings: every member consumes from every other"
  }
  assert {
    condition     = alltrue([for p in liqo_peering.this : p.consumer_cluster != p.provider_cluster])
    error_message = "no cluster peers with itself"
  }
}

run "inputs_reach_every_peering" {
  command = plan

  variables {
    gateway = { service_type = "NodePort", mtu = 1420 }
    timeout = "10m"
    resources = {
      cpu               = "2"
      memory            = "4Gi"
      pods              = "30"
      ephemeral_storage = "10Gi"
      others            = { "nvidia.com/gpu" = "1" }
    }
  }

  assert {
    condition = alltrue([for p in liqo_peering.this : [p.cpu, p.memory, p.pods, p.ephemeral_storage] == ["2", "4Gi", "30", "10Gi"]
    && p.resources == tomap({ "nvidia.com/gpu" = "1" })])
    error_message = "every peering asks for the fleet's resources"
  }
  assert {
    condition     = alltrue([for p in liqo_peering.this : p.networking && p.gateway.service_type == "NodePort" && p.gateway.mtu == 1420])
    error_message = "every peering takes the fleet's gateway"
  }
  assert {
    condition     = alltrue([for p in liqo_peering.this : p.timeouts.create == "10m" && p.timeouts.delete == "10m"])
    error_message = "every peering takes the fleet's timeout"
  }
}

run "one_peering_asks_for_more" {
  command = plan

  variables {
    resources_by_peering = {
      "hub/edge-2" = { cpu = "3", memory = "6Gi", pods = "40" }
    }
  }

  assert {
    condition     = [liqo_peering.this["hub/edge-2"].cpu, liqo_peering.this["hub/edge-2"].memory, liqo_peering.this["hub/edge-2"].pods] == ["3", "6Gi", "40"]
    error_message = "a peering named in resources_by_peering asks for its own resources"
  }
  assert {
    condition     = [liqo_peering.this["hub/edge-1"].cpu, liqo_peering.this["hub/edge-1"].memory, liqo_peering.this["hub/edge-1"].pods] == ["1", "2Gi", "20"]
    error_message = "the other peerings keep the fleet's resources"
  }
}

run "resources_by_peering_names_members" {
  command = plan

  variables {
    resources_by_peering = {
      "hub/edge-9" = { cpu = "3", memory = "6Gi", pods = "40" }
    }
  }

  expect_failures = [var.resources_by_peering]
}

run "full_mesh_one_port_per_pair" {
  command = plan

  variables {
    topology = "full-mesh"
    hub      = null
    gateway  = { port = 52000, mtu = 1420 }
  }

  assert {
    condition = [for k in ["hub/edge-1", "edge-1/hub", "hub/edge-2", "edge-2/hub", "edge-1/edge-2", "edge-2/edge-1"] : liqo_peering.this[k].gateway.port] == [
      52000, 52000, 52001, 52001, 52002, 52002
    ]
    error_message = "each pair of members has a port of its own, the fleet's plus the pair's number, shared by both directions"
  }
  assert {
    condition     = alltrue([for p in liqo_peering.this : p.gateway.mtu == 1420])
    error_message = "the fleet's other gateway settings reach every peering"
  }
}

run "spokes_consuming_from_the_hub_get_ports_of_their_own" {
  command = plan

  variables {
    hub_consumes = false
  }

  assert {
    condition     = [liqo_peering.this["edge-1/hub"].gateway.port, liqo_peering.this["edge-2/hub"].gateway.port] == [51840, 51841]
    error_message = "the hub hosts every server: each spoke's has a port of its own"
  }
}

run "a_consuming_hub_keeps_the_fleet_port" {
  command = plan

  variables {
    gateway = { port = 52000 }
  }

  assert {
    condition     = alltrue([for p in liqo_peering.this : p.gateway.port == 52000])
    error_message = "the spokes host one server each: the fleet's port is kept"
  }
}

run "networking_off" {
  command = plan

  variables {
    networking = false
  }

  assert {
    condition     = alltrue([for p in liqo_peering.this : !p.networking])
    error_message = "every peering takes the fleet's networking"
  }
}

run "one_member_is_not_a_fleet" {
  command = plan

  variables {
    members = ["hub"]
  }

  expect_failures = [var.members]
}

run "members_must_be_distinct" {
  command = plan

  variables {
    members = ["hub", "edge-1", "edge-1"]
  }

  expect_failures = [var.members]
}

run "unknown_topology" {
  command = plan

  variables {
    topology = "ring"
  }

  expect_failures = [var.topology]
}

run "hub_must_be_a_member" {
  command = plan

  variables {
    hub = "edge-3"
  }

  expect_failures = [var.hub]
}

run "hub_and_spoke_needs_a_hub" {
  command = plan

  variables {
    hub = null
  }

  expect_failures = [var.hub]
}
