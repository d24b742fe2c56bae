output "peerings" {
  description = "Each peering, keyed \"<consumer>/<provider>\": its virtual node, cluster IDs, grant and status."
  value = {
    for key, p in liqo_peering.this : key => {
      virtual_node_name   = p.virtual_node_name
      consumer_cluster_id = p.consumer_cluster_id
      provider_cluster_id = p.provider_cluster_id
      granted             = p.granted
      status              = p.status
    }
  }
}

output "placement" {
  description = "With placement: each placed peering, keyed \"<consumer>/<provider>\", and the offer chosen with its cost per hour (approximate: the provider's plugin checks the ceiling exactly)."
  value       = var.placement == null ? {} : local.placed

  precondition {
    condition     = var.placement == null || length(try(module.placement[0].unplaced, [])) == 0
    error_message = "placement: a consumer has no provider offering what it asks within max_cost_per_hour: raise the ceiling, ask for less, or add providers."
  }
}
