# The fleet module over the sandbox's three clusters (`make sandbox CLUSTERS=3`): consumer,
# provider and provider-2. By default the consumer is the hub and consumes from the other two;
# with topology = "full-mesh" every cluster consumes from every other (six peerings).

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
}

output "peerings" {
  description = "Each peering of the fleet: virtual node, IDs, grant and status."
  value       = module.fleet.peerings
}
