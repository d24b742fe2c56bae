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

  cpu    = var.cpu
  memory = var.memory
  pods   = var.pods
}

resource "liqo_peering" "provider_to_consumer" {
  consumer_cluster = "provider"
  provider_cluster = "consumer"
  networking       = var.networking

  cpu    = var.cpu
  memory = var.memory
  pods   = var.pods
}
