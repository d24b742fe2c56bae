# The state of the consumer's peering with cl-provider, per module.
data "liqo_foreign_cluster" "provider" {
  cluster    = "consumer"
  cluster_id = "cl-provider"
}

output "peering" {
  value = {
    role           = data.liqo_foreign_cluster.provider.role
    networking     = data.liqo_foreign_cluster.provider.networking.enabled
    authentication = data.liqo_foreign_cluster.provider.authentication.enabled
    offloading     = data.liqo_foreign_cluster.provider.offloading.enabled
    conditions = {
      for c in data.liqo_foreign_cluster.provider.networking.conditions : c.type => c.status
    }
  }
}
