# Acceptance test of this example on real clusters: the sandbox's (`make sandbox` at the
# repository's root), whose kubeconfigs are the variables' defaults. With the sandbox's CLI
# configuration (it installs the provider built from the tree), in the example's folder:
#
#   export TF_CLI_CONFIG_FILE=../../.sandbox/terraformrc
#   terraform test -test-directory=tests/sandbox -var networking=false   # true when the sandbox runs gateways (as root)
#
# It peers the two clusters, asks for less, and destroys the peering when the file ends, as
# terraform test does. (Files in tests/ need no cluster; plain `terraform test` runs only them.)

run "peers_the_clusters" {
  assert {
    condition     = output.status.authentication == "Established" && output.status.offloading == "Ready"
    error_message = "the peering must be authenticated and its virtual node Ready"
  }
  assert {
    condition     = output.status.networking == (var.networking ? "Established" : "Disabled")
    error_message = "the tunnel must be up with networking, and Disabled without"
  }
  assert {
    condition     = output.virtual_node == liqo_peering.this.provider_cluster_id
    error_message = "the consumer's virtual node is named after the provider's cluster ID"
  }
  assert {
    condition     = [output.granted["cpu"], output.granted["memory"], output.granted["pods"]] == [var.cpu, var.memory, var.pods]
    error_message = "the provider must grant what the consumer asked for"
  }
}

run "asks_for_less" {
  variables {
    cpu    = "1"
    memory = "2Gi"
  }

  assert {
    condition     = output.granted["cpu"] == "1" && output.granted["memory"] == "2Gi"
    error_message = "the provider must grant the new request"
  }
  assert {
    # The first run's virtual node: named after the provider's cluster ID. (A run's outputs in
    # an assertion, run.peers_the_clusters.virtual_node, work under Terraform only: OpenTofu
    # 1.12 takes them in variables blocks alone.)
    condition     = output.virtual_node == liqo_peering.this.provider_cluster_id && output.status.offloading == "Ready"
    error_message = "the same virtual node must stay Ready"
  }
}
