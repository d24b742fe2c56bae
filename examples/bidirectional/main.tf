# A bidirectional peering: each cluster consumes resources of the other, through two
# liqo_peering in opposite directions. They share the tenant namespaces and the tunnel (give
# both the same networking and gateway settings); destroying one leaves the other working.

terraform {
  required_version = ">= 1.5"
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

resource "liqo_peering" "consumer_to_provider" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  networking       = var.networking

  # One tunnel serves both directions: give both the same gateway. A LoadBalancer Service needs
  # a load balancer in the cluster hosting the server; without one, use NodePort.
  gateway = {
    service_type = var.gateway_service_type
  }

  cpu    = var.cpu
  memory = var.memory
  pods   = var.pods
}

resource "liqo_peering" "provider_to_consumer" {
  consumer_cluster = "provider"
  provider_cluster = "consumer"
  networking       = var.networking

  # The same gateway as the other direction's: they share the tunnel.
  gateway = {
    service_type = var.gateway_service_type
  }

  cpu    = var.cpu
  memory = var.memory
  pods   = var.pods
}
