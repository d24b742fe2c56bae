# A fleet of peered clusters: one liqo_peering per (consumer, provider) pair of the topology.
#
# A module cannot configure a provider from a map of kubeconfigs it is given (provider blocks
# in modules break for_each and count on the module), so the caller configures the liqo
# provider with a `clusters` map and this module names its members by key:
#
#   provider "liqo" {
#     clusters = { for name, path in var.kubeconfigs : name => { config_path = path } }
#   }
#   module "fleet" {
#     source  = "../modules/fleet"
#     members = keys(var.kubeconfigs)
#   }

locals {
  full_mesh = [
    for pair in setproduct(var.members, var.members) : { consumer = pair[0], provider = pair[1] }
    if pair[0] != pair[1]
  ]
  hub_and_spoke = [
    for member in var.members : {
      consumer = var.hub_consumes ? var.hub : member
      provider = var.hub_consumes ? member : var.hub
    }
    if member != var.hub
  ]
  pairs = var.topology == "full-mesh" ? local.full_mesh : local.hub_and_spoke
  # Keyed "<consumer>/<provider>", the peering's own ID.
  peerings = { for p in local.pairs : "${p.consumer}/${p.provider}" => p }
  # What each peering asks: its own entry of resources_by_peering, else the fleet's.
  resources = { for key in keys(local.peerings) : key => lookup(var.resources_by_peering, key, var.resources) }

  # Gateway servers listen in their node's network namespace, so each server a cluster hosts
  # needs a port of its own. A cluster hosts one per peering in which it is the provider (the
  # default server location): several in a full mesh, and on the hub when the spokes consume.
  # There each pair of members gets its own port, the fleet's port plus the pair's number
  # (members i < j: j*(j-1)/2 + i, so adding members at the end keeps the others' ports); both
  # directions of a pair share it, as they share one tunnel. A hub that consumes hosts no
  # server: its spokes keep the fleet's port.
  # Without networking there is no server, and the fleet's gateway (null: none) is kept.
  servers_share_clusters = var.topology == "full-mesh" || !var.hub_consumes
  base_port              = coalesce(try(var.gateway.port, null), 51840)
  ports = { for key, p in local.peerings : key => local.base_port + (
    max(index(var.members, p.consumer), index(var.members, p.provider)) * (max(index(var.members, p.consumer), index(var.members, p.provider)) - 1) / 2
    + min(index(var.members, p.consumer), index(var.members, p.provider))
  ) }
}

# Placement by price (var.placement): the offers each consumer gets from each candidate provider.
data "liqo_offers" "candidate" {
  for_each = var.placement == null ? {} : local.peerings

  cluster             = each.value.consumer
  provider_cluster_id = var.placement.cluster_ids[each.value.provider]
}

locals {
  asked = { for key in keys(local.peerings) : key => merge(
    { cpu = local.resources[key].cpu, memory = local.resources[key].memory, pods = local.resources[key].pods },
    local.resources[key].ephemeral_storage == null ? {} : { "ephemeral-storage" = local.resources[key].ephemeral_storage },
    coalesce(local.resources[key].others, {}),
  ) }
  placed = try(module.placement[0].placed, {})
  active = var.placement == null ? local.peerings : { for key, p in local.peerings : key => p if contains(keys(local.placed), key) }
}

# The cheapest candidate of each consumer.
module "placement" {
  source = "./placement"
  count  = var.placement == null ? 0 : 1

  offers            = { for key, d in data.liqo_offers.candidate : key => d.offers }
  asked             = local.asked
  consumers         = { for key, p in local.peerings : key => p.consumer }
  max_cost_per_hour = var.placement.max_cost_per_hour
}

resource "liqo_peering" "this" {
  for_each = local.active

  consumer_cluster = each.value.consumer
  provider_cluster = each.value.provider
  networking       = var.networking
  gateway = var.networking && local.servers_share_clusters ? {
    service_type = try(var.gateway.service_type, null)
    port         = local.ports[each.key]
    node_port    = try(var.gateway.node_port, null)
    mtu          = try(var.gateway.mtu, null)
  } : var.gateway

  cpu               = local.resources[each.key].cpu
  memory            = local.resources[each.key].memory
  pods              = local.resources[each.key].pods
  ephemeral_storage = local.resources[each.key].ephemeral_storage
  resources         = local.resources[each.key].others
  offer = var.placement == null ? null : {
    name              = local.placed[each.key].offer
    max_cost_per_hour = var.placement.max_cost_per_hour
    duration          = var.placement.duration
  }

  timeouts {
    create = var.timeout
    update = var.timeout
    delete = var.timeout
  }
}
