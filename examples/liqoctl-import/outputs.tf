output "status" {
  description = "State of each module, as `liqoctl info peer` shows it."
  value       = liqo_peering.this.status
}

output "virtual_node" {
  description = "The consumer's node standing for the provider."
  value       = liqo_peering.this.virtual_node_name
}
