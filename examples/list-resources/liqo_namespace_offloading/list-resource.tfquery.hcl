# The namespaces offloaded in the provider block's own cluster (`liqoctl offload namespace` or
# Terraform), at most 50.
list "liqo_namespace_offloading" "all" {
  provider = liqo
  limit    = 50
}

# The offloading of one namespace of the cluster "consumer".
list "liqo_namespace_offloading" "demo" {
  provider = liqo

  config {
    cluster   = "consumer"
    namespace = "demo"
  }
}
