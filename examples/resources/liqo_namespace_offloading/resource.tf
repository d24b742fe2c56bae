# Offload the namespace demo of the consumer cluster to the provider clusters in Europe; pods may
# run locally or remotely.
resource "liqo_namespace_offloading" "demo" {
  cluster                    = "consumer"
  namespace                  = "demo"
  namespace_mapping_strategy = "DefaultName" # remote namespace: demo-<consumer cluster ID>
  pod_offloading_strategy    = "LocalAndRemote"

  cluster_selector = [{
    match_expressions = [{
      key      = "topology.kubernetes.io/region"
      operator = "In"
      values   = ["eu-west", "eu-south"]
    }]
  }]
}

# The remote namespace under a chosen name:
#   namespace_mapping_strategy = "SelectedName"
#   remote_namespace_name      = "demo-from-rome"

output "offloading_phase" {
  value = liqo_namespace_offloading.demo.phase
}
