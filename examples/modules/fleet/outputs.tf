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
