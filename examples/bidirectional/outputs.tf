output "virtual_nodes" {
  description = "Each cluster's virtual node standing for the other."
  value = {
    on_consumer = liqo_peering.consumer_to_provider.virtual_node_name
    on_provider = liqo_peering.provider_to_consumer.virtual_node_name
  }
}
