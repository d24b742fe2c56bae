# Two virtual nodes of one peering, each from its own slice and each targeting a pool of the
# provider's nodes. The peering makes no virtual node of its own, and neither do the slices.
resource "liqo_peering" "this" {
  consumer_cluster    = "consumer"
  provider_cluster    = "provider"
  cpu                 = "4"
  memory              = "8Gi"
  pods                = "110"
  create_virtual_node = false
}

resource "liqo_resource_slice" "gpu" {
  cluster             = "consumer"
  name                = "gpu"
  namespace           = liqo_peering.this.consumer_tenant_namespace
  provider_cluster_id = liqo_peering.this.provider_cluster_id
  cpu                 = "8"
  memory              = "32Gi"
  pods                = "20"
  create_virtual_node = false
  wait_for_acceptance = true
}

resource "liqo_virtual_node" "general" {
  cluster             = "consumer"
  name                = "provider-general"
  namespace           = liqo_peering.this.consumer_tenant_namespace
  provider_cluster_id = liqo_peering.this.provider_cluster_id
  resource_slice_name = liqo_peering.this.provider_cluster_id # the peering's own slice

  labels = { "example.com/pool" = "general" }
}

resource "liqo_virtual_node" "gpu" {
  cluster             = "consumer"
  name                = "provider-gpu"
  namespace           = liqo_resource_slice.gpu.namespace
  provider_cluster_id = liqo_resource_slice.gpu.provider_cluster_id
  resource_slice_name = liqo_resource_slice.gpu.name

  labels = { "example.com/pool" = "gpu" }
  offloading_patch = {
    node_selector = { "example.com/accelerator" = "nvidia" }
    tolerations = [{
      key      = "nvidia.com/gpu"
      operator = "Exists"
      effect   = "NoSchedule"
    }]
    node_affinity_terms = [{
      match_expressions = [{
        key      = "topology.kubernetes.io/zone"
        operator = "In"
        values   = ["eu-west-1a", "eu-west-1b"]
      }]
    }]
    runtime_class_name = "nvidia"
  }
}
