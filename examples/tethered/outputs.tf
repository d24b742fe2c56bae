output "foreign_cluster_id" {
  description = "The foreign cluster the home is tethered to (null when autonomous)."
  value       = one(liqo_tethering.home[*].foreign_cluster_id)
}

output "virtual_nodes" {
  description = "The foreign cluster's virtual node on the home, and the home's on the foreign cluster (tethered only)."
  value = {
    on_home    = liqo_peering.home_on_foreign.virtual_node_name
    on_foreign = one(liqo_peering.foreign_on_home[*].virtual_node_name)
  }
}
