# Bring a peering made by upstream `liqoctl peer` under Terraform: the import block adopts it
# as a liqo_peering, and the resource is written as liqoctl made it (networking on, the
# gateway's defaults, and what the provider granted a slice that named no resources), so that the
# first plan only imports and the next one has nothing to do. From then on it is managed like any
# liqo_peering: changing cpu re-negotiates it in place, through liqoctl's own gateways, and
# `terraform destroy` unpeers it.

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

import {
  to = liqo_peering.this
  id = "consumer/provider" # <consumer_cluster>/<provider_cluster>, keys of the clusters map
}

resource "liqo_peering" "this" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  networking       = var.networking

  # liqoctl asks for nothing in particular; the provider grants its defaults (the controller
  # manager's --default-node-resources, capped by what it has).
  cpu    = var.cpu
  memory = var.memory
  pods   = var.pods
}
