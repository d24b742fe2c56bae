# Unit tests of the bidirectional example with a mocked liqo provider: no cluster is reached, so
# they run anywhere with `terraform test` in the example's folder (Terraform >= 1.7).

mock_provider "liqo" {
  mock_resource "liqo_peering" {
    defaults = { virtual_node_name = "virtual-node" }
  }
}

run "two_peerings_in_opposite_directions" {
  command = plan

  assert {
    condition = (liqo_peering.consumer_to_provider.consumer_cluster == liqo_peering.provider_to_consumer.provider_cluster
    && liqo_peering.consumer_to_provider.provider_cluster == liqo_peering.provider_to_consumer.consumer_cluster)
    error_message = "the two peerings must go in opposite directions between the same clusters"
  }
  assert {
    condition     = liqo_peering.consumer_to_provider.consumer_cluster != liqo_peering.consumer_to_provider.provider_cluster
    error_message = "a peering joins two different clusters"
  }
}

run "both_directions_share_the_settings" {
  command = plan

  variables {
    networking           = false
    gateway_service_type = "NodePort"
    cpu                  = "3"
    memory               = "6Gi"
    pods                 = "40"
  }

  assert {
    condition = alltrue([for p in [liqo_peering.consumer_to_provider, liqo_peering.provider_to_consumer] :
    !p.networking && p.gateway.service_type == "NodePort" && [p.cpu, p.memory, p.pods] == ["3", "6Gi", "40"]])
    error_message = "both directions must take networking, the gateway's service type, cpu, memory and pods (they share one tunnel)"
  }
}

run "outputs_name_each_virtual_node" {
  assert {
    condition     = output.virtual_nodes == { on_consumer = "virtual-node", on_provider = "virtual-node" }
    error_message = "output virtual_nodes must name each direction's virtual node"
  }
}
