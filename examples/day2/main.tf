# Day-2 operations on a peering, as actions (Terraform >= 1.14): nothing here is created or
# destroyed; each action runs when invoked, e.g.
#
#   terraform apply -invoke=action.liqo_peering_test.tunnel
#   terraform apply -invoke=action.liqo_tenant_cordon.drain
#   terraform apply -invoke=action.liqo_tenant_cordon.uncordon
#
# With `make sandbox` and examples/peering applied, point the variables at the sandbox's
# kubeconfigs (.sandbox/consumer.kubeconfig and .sandbox/provider.kubeconfig).

terraform {
  required_version = ">= 1.14"
  required_providers {
    liqo = {
      source = "peerkit/liqo"
    }
  }
}

provider "liqo" {
  clusters = {
    consumer = { config_path = var.consumer_kubeconfig }
    provider = { config_path = var.provider_kubeconfig }
  }
}

# The consumer's cluster ID names its Tenant on the provider.
data "liqo_cluster" "consumer" {
  cluster = "consumer"
}

# Tests the peering's tunnel: both gateways must report it Connected, measured after the
# invocation began.
action "liqo_peering_test" "tunnel" {
  config {
    consumer_cluster = "consumer"
    provider_cluster = "provider"
    max_latency      = var.max_latency
  }
}

# No new ResourceSlices for the consumer; what runs keeps running.
action "liqo_tenant_cordon" "cordon" {
  config {
    cluster             = "provider"
    consumer_cluster_id = data.liqo_cluster.consumer.cluster_id
    tenant_condition    = "Cordoned"
  }
}

# Evicts the consumer's workloads from the provider: its virtual node goes.
action "liqo_tenant_cordon" "drain" {
  config {
    cluster             = "provider"
    consumer_cluster_id = data.liqo_cluster.consumer.cluster_id
    tenant_condition    = "Drained"
  }
}

# Back to normal: the consumer's slices are negotiated again.
action "liqo_tenant_cordon" "uncordon" {
  config {
    cluster             = "provider"
    consumer_cluster_id = data.liqo_cluster.consumer.cluster_id
    tenant_condition    = "Active"
  }
}
