# The tenant namespace of the peering with cluster cl-provider, in the consumer cluster (the
# "consumer" key of the provider block's clusters map). Its name defaults to
# liqo-tenant-cl-provider; every object of that peering goes in it.
resource "liqo_tenant_namespace" "provider" {
  cluster           = "consumer"
  remote_cluster_id = "cl-provider"

  labels = {
    team = "platform"
  }
}
