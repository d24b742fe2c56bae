# Consumer side: ask the provider cluster cl-provider for resources (the "consumer" key of the
# provider block's clusters map). The slice is replicated to the provider, which accepts or
# denies it; once accepted, a virtual node offers the granted resources.
resource "liqo_tenant_namespace" "provider" {
  cluster           = "consumer"
  remote_cluster_id = "cl-provider"
}

resource "liqo_resource_slice" "test" {
  cluster             = "consumer"
  name                = "test"
  namespace           = liqo_tenant_namespace.provider.name # default: liqo-tenant-<provider_cluster_id>
  provider_cluster_id = liqo_tenant_namespace.provider.remote_cluster_id
  consumer_cluster_id = "cl-consumer"

  cpu    = "20"
  memory = "128Gi"
  pods   = "110"
  resources = {
    "nvidia.com/gpu" = "2"
  }

  # Wait until the provider has accepted the slice and granted the resources.
  wait_for_acceptance = true
  timeouts {
    create = "10m"
    update = "10m"
  }
}

output "granted" {
  value = liqo_resource_slice.test.granted
}
