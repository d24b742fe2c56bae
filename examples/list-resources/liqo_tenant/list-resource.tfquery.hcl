# The Tenants of the provider cluster "provider": one per consumer peered with it.
list "liqo_tenant" "provider" {
  provider = liqo

  config {
    cluster = "provider"
  }
}

# The Tenant of one consumer, with its state.
list "liqo_tenant" "cl_consumer" {
  provider         = liqo
  include_resource = true

  config {
    cluster             = "provider"
    consumer_cluster_id = "cl-consumer"
  }
}
