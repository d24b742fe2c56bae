# What each cluster says about itself, to feed to its peer's resources.
data "liqo_cluster" "consumer" {
  cluster = "consumer"
}

data "liqo_cluster" "provider" {
  cluster = "provider"
}

# The consumer's tenant namespace for the provider, named after the provider's cluster ID.
resource "liqo_tenant_namespace" "provider" {
  cluster           = "consumer"
  remote_cluster_id = data.liqo_cluster.provider.cluster_id
}

# pod_cidrs lists all of the cluster's pod CIDRs (a cluster may have several since Liqo v1.2);
# pod_cidr, deprecated, is the one when there is one and null otherwise.
output "provider_cidrs" {
  value = {
    pods     = data.liqo_cluster.provider.pod_cidrs
    external = data.liqo_cluster.provider.external_cidr
    api      = data.liqo_cluster.provider.api_server_url
    version  = data.liqo_cluster.provider.kubernetes_version
  }
}
