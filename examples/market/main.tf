# Seed 004's advertisement and contract, end to end: the provider offers resources at a price
# (liqo_offer), the consumer takes its resources on that offer within a price ceiling
# (liqo_peering's offer), both clusters sign the contract, the provider grants what it says and
# meters what the consumer's offloaded pods use; liqo_contract reads the cost accrued so far.
# With `make sandbox`, the kubeconfigs are in .sandbox/.

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

# The provider's advertisement: what it shares with every consumer, and at what price per unit
# and hour.
resource "liqo_offer" "standard" {
  cluster   = "provider"
  name      = "standard"
  resources = { cpu = "8", memory = "16Gi", pods = "110" }
  currency  = "EUR"
  prices = {
    cpu    = { amount = "0.04" }
    memory = { amount = "0.005", per = "1Gi" }
  }
  max_duration = "8760h"
}

# The consumer accepts it: the contract is signed by both clusters before anything is granted,
# and the grant follows it. Above max_cost_per_hour the apply is refused and nothing is
# written. A new duration renews the contract in place.
resource "liqo_peering" "this" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  networking       = var.networking

  cpu    = var.cpu
  memory = var.memory
  pods   = "20"

  offer = {
    name              = liqo_offer.standard.name
    max_cost_per_hour = var.max_cost_per_hour
    duration          = var.duration
  }

  timeouts {
    create = "5m"
  }
}

# Read-only: the contract as the consumer keeps it (phase, end, cost accrued so far). It
# changes on its own, so it is a data source, not state of liqo_peering.
data "liqo_contract" "this" {
  cluster             = "consumer"
  provider_cluster_id = liqo_peering.this.provider_cluster_id
}

# The offers the provider makes to this consumer, read with the consumer's own identity once
# it has authenticated: a later plan shows the prices before a change of the peering.
data "liqo_offers" "provider" {
  cluster             = "consumer"
  provider_cluster_id = liqo_peering.this.provider_cluster_id
}
