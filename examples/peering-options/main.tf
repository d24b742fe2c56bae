# One liqo_peering with `liqoctl peer`'s other options: the gateway server on the consumer
# (--gw-server-service-location Consumer), reached by the provider's client through a NAT
# (--gw-client-address, --gw-client-port), and the offloading asked for or not
# (--create-resource-slice, --create-virtual-node, --resource-slice-class). Toggling
# create_virtual_node or create_resource_slice is an in-place update.

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

resource "liqo_peering" "this" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  networking       = var.networking

  # Nothing is asked of the provider without a slice.
  cpu    = var.create_resource_slice ? "1" : null
  memory = var.create_resource_slice ? "1Gi" : null
  pods   = var.create_resource_slice ? "10" : null

  create_resource_slice = var.create_resource_slice
  create_virtual_node   = var.create_resource_slice && var.create_virtual_node
  resource_slice_class  = "default"

  gateway = {
    server_location = "Consumer"
    client_address  = var.nat_address # null: the address the server's Service reports
    client_port     = var.nat_port
  }
}
