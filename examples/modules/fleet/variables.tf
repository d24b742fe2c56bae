variable "members" {
  description = "Clusters to peer: keys of the `clusters` map of the liqo provider the caller passes to this module."
  type        = list(string)

  validation {
    condition     = length(var.members) >= 2 && length(distinct(var.members)) == length(var.members)
    error_message = "members must list at least two distinct keys of the provider's clusters map."
  }
}

variable "topology" {
  description = "\"hub-and-spoke\": the hub peers with every other member; \"full-mesh\": every member consumes from every other."
  type        = string
  default     = "hub-and-spoke"

  validation {
    condition     = contains(["hub-and-spoke", "full-mesh"], var.topology)
    error_message = "topology must be \"hub-and-spoke\" or \"full-mesh\"."
  }
}

variable "hub" {
  description = "The hub of a hub-and-spoke fleet: one of members (ignored in a full mesh)."
  type        = string
  default     = null

  validation {
    condition     = var.topology != "hub-and-spoke" || try(contains(var.members, var.hub), false)
    error_message = "a hub-and-spoke fleet needs hub set to one of members."
  }
}

variable "hub_consumes" {
  description = "In a hub-and-spoke fleet, true: the hub consumes from each spoke (one virtual node per spoke on the hub); false: each spoke consumes from the hub."
  type        = bool
  default     = true
}

variable "resources" {
  description = "What each consumer asks of each of its providers (Kubernetes quantities); `others` are further resources by name, e.g. { \"nvidia.com/gpu\" = \"1\" }."
  type = object({
    cpu               = string
    memory            = string
    pods              = string
    ephemeral_storage = optional(string)
    others            = optional(map(string))
  })
  default = {
    cpu    = "1"
    memory = "2Gi"
    pods   = "20"
  }
}

variable "resources_by_peering" {
  description = "What a consumer asks of one provider instead of `resources`, keyed \"<consumer>/<provider>\" (seed 004: the amount can differ for each peer); the other peerings keep `resources`."
  type = map(object({
    cpu               = string
    memory            = string
    pods              = string
    ephemeral_storage = optional(string)
    others            = optional(map(string))
  }))
  default = {}

  validation {
    condition = alltrue([for key in keys(var.resources_by_peering) :
      length(split("/", key)) == 2 && alltrue([for c in split("/", key) : contains(var.members, c)]) && split("/", key)[0] != split("/", key)[1]
    ])
    error_message = "resources_by_peering keys must be \"<consumer>/<provider>\", two distinct members."
  }
}

variable "networking" {
  description = "Connect the members' pod networks through WireGuard gateways (one tunnel per pair of clusters)."
  type        = bool
  default     = true
}

variable "gateway" {
  description = "How the tunnels are exposed (see liqo_peering's gateway); null: the defaults."
  type = object({
    service_type = optional(string)
    port         = optional(number)
    node_port    = optional(number)
    mtu          = optional(number)
  })
  default = null
}

variable "timeout" {
  description = "Bound of each peering's create, update and delete."
  type        = string
  default     = "5m"
}

variable "placement" {
  description = <<-EOT
    Place each consumer on its cheapest provider (seed 004): for each peering of the topology the
    consumer's offers from the provider are read (data "liqo_offers", with the consumer's identity:
    the consumer must have authenticated with the candidates, e.g. by an earlier apply or liqo_identity),
    each offer that offers every resource asked, at least as much, is priced per hour for what the
    consumer asks, and the consumer peers only with the provider of the cheapest one within
    max_cost_per_hour, accepting that offer (liqo_peering's offer). cluster_ids maps each member to
    its cluster ID. null: every peering of the topology, no offer.
  EOT
  type = object({
    max_cost_per_hour = string
    duration          = optional(string)
    cluster_ids       = map(string)
  })
  default = null

  validation {
    condition     = var.placement == null || can(regex("^[0-9]+(\\.[0-9]+)?$", var.placement.max_cost_per_hour))
    error_message = "placement.max_cost_per_hour must be a non-negative decimal such as 2.50."
  }
  validation {
    condition     = var.placement == null || alltrue([for m in var.members : contains(keys(try(var.placement.cluster_ids, {})), m)])
    error_message = "placement.cluster_ids must map every member to its cluster ID."
  }
}
