output "status" {
  description = "State of each module: offloading is Disabled without a slice or a virtual node."
  value       = liqo_peering.this.status
}

output "virtual_node" {
  description = "The consumer's virtual node (null without one)."
  value       = liqo_peering.this.virtual_node_name
}
