# Consumer side: the provider's networks, as the consumer must know them (seed 003). The
# provider cluster holds the mirror image, with the consumer's CIDRs.
data "liqo_cluster" "provider" {
  cluster = "provider"
}

resource "liqo_tenant_namespace" "provider" {
  cluster           = "consumer"
  remote_cluster_id = data.liqo_cluster.provider.cluster_id
}

resource "liqo_network_configuration" "provider" {
  cluster               = "consumer"
  namespace             = liqo_tenant_namespace.provider.name
  remote_cluster_id     = data.liqo_cluster.provider.cluster_id      # also the default name
  remote_pod_cidrs      = data.liqo_cluster.provider.pod_cidrs       # all of them, e.g. ["10.243.0.0/16"]
  remote_external_cidrs = [data.liqo_cluster.provider.external_cidr] # e.g. ["10.70.0.0/16"]

  # Wait until the liqo controllers report how the provider's networks are remapped here.
  wait_for_remap = true
  timeouts {
    create = "5m"
    update = "5m"
  }
}

output "provider_pod_cidrs_seen_from_consumer" {
  value = liqo_network_configuration.provider.remapped_pod_cidrs
}
