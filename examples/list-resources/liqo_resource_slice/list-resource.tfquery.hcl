# The ResourceSlices of the consumer cluster "consumer" (not the copies its own consumers
# replicated to it).
list "liqo_resource_slice" "consumer" {
  provider = liqo

  config {
    cluster = "consumer"
  }
}

# Those asking the provider cl-provider for resources, in its tenant namespace.
list "liqo_resource_slice" "cl_provider" {
  provider = liqo

  config {
    cluster             = "consumer"
    namespace           = "liqo-tenant-cl-provider"
    provider_cluster_id = "cl-provider"
  }
}
