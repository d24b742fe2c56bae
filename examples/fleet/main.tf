# The fleet module over the sandbox's three clusters (`make sandbox CLUSTERS=3`): consumer,
# provider and provider-2. By default the consumer is the hub and consumes from the other two;
# with topology = "full-mesh" every cluster consumes from every other (six peerings). With
# max_cost_per_hour, each consumer peers only with its cheapest provider offering what it asks
# within that ceiling (the providers declare offers with liqo_offer; the consumer must have
# authenticated with them, e.g. by an apply without it), and accepts that offer: a contract.

terraform {
  required_version = ">= 1.9"
  required_providers {
    liqo = {
      source = "peerkit/liqo"
    }
  }
}

# One provider block serves the whole fleet: a for expression builds its clusters map.
provider "liqo" {
  clusters = { for name, path in var.kubeconfigs : name => { config_path = path } }
}

# Each member's cluster ID, for reading the offers the others make to it.
data "liqo_cluster" "member" {
  for_each = var.max_cost_per_hour == null ? toset([]) : toset(keys(var.kubeconfigs))
  cluster  = each.key
}

module "fleet" {
  source = "../modules/fleet"

  members    = keys(var.kubeconfigs)
  topology   = var.topology
  hub        = "consumer"
  networking = var.networking
  resources = {
    cpu    = "1"
    memory = "2Gi"
    pods   = "20"
  }
  placement = var.max_cost_per_hour == null ? null : {
    max_cost_per_hour = var.max_cost_per_hour
    cluster_ids       = { for name, c in data.liqo_cluster.member : name => c.cluster_id }
  }
}

output "peerings" {
  description = "Each peering of the fleet: virtual node, IDs, grant and status."
  value       = module.fleet.peerings
}
