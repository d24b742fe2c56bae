# Placement by price, the fleet's choice of a provider for each consumer (seed 004): given the
# offers each candidate provider makes to a consumer (data "liqo_offers", keyed by peering
# "<consumer>/<provider>") and what each peering would ask, each offer that offers every
# resource asked, at least as much, is priced per hour for it, and each consumer is placed on
# the peering and offer of the cheapest one within the ceiling. Pure computation: no provider.
# Costs are approximate (floating point): the provider's plugin checks the ceiling exactly at
# apply.

variable "offers" {
  description = "Offers by candidate peering \"<consumer>/<provider>\": liqo_offers' offers (the attributes used here)."
  type = map(list(object({
    name      = string
    resources = map(string)
    prices    = map(object({ amount = string, per = string }))
  })))
}

variable "asked" {
  description = "What each candidate peering asks, by resource name, as quantities."
  type        = map(map(string))
}

variable "consumers" {
  description = "The consumer of each candidate peering."
  type        = map(string)
}

variable "max_cost_per_hour" {
  description = "The ceiling of a peering's cost per hour."
  type        = string
}

locals {
  units = {
    "" = 1, m = 0.001, k = 1e3, M = 1e6, G = 1e9, T = 1e12, Ki = 1024, Mi = 1048576, Gi = 1073741824, Ti = 1099511627776
  }
  offers = { for key, offers in var.offers : key => coalesce(offers, []) if contains(keys(var.asked), key) }
  # Every quantity asked, offered or priced per, as a number.
  quantities = distinct(concat(["1"], flatten([for key, offers in local.offers : concat(values(var.asked[key]),
    flatten([for o in offers : concat(values(coalesce(o.resources, {})), [for p in values(coalesce(o.prices, {})) : coalesce(p.per, "1")])]),
  )])))
  quantity = { for q in local.quantities : q => tonumber(regex("^([0-9.]+)", q)[0]) * local.units[regex("^[0-9.]+([a-zA-Z]*)$", q)[0]] }

  # Per candidate peering, the cost per hour of what it asks on each offer that offers it all.
  costs = { for key, offers in local.offers : key => {
    for o in offers : o.name => sum(concat([0], [for r, q in var.asked[key] :
      local.quantity[q] / local.quantity[coalesce(try(o.prices[r].per, null), "1")] * tonumber(coalesce(try(o.prices[r].amount, null), "0"))
    ]))
    if alltrue([for r, q in var.asked[key] : try(local.quantity[q] <= local.quantity[o.resources[r]], false)])
  } }
  # Per consumer, its candidates within the ceiling, cheapest first: "<cost>|<peering>|<offer>".
  choices = { for c in distinct(values(var.consumers)) : c => sort(flatten([
    for key, costs in local.costs : [
      for name, cost in costs : format("%024.9f|%s|%s", cost, key, name)
      if var.consumers[key] == c && cost <= tonumber(var.max_cost_per_hour)
    ]
  ])) }
}

output "placed" {
  description = "The peering each consumer is placed on, keyed \"<consumer>/<provider>\": the offer and its cost per hour."
  value = { for c, sorted in local.choices : split("|", sorted[0])[1] => {
    offer = split("|", sorted[0])[2], cost_per_hour = tonumber(split("|", sorted[0])[0])
  } if length(sorted) > 0 }
}

output "unplaced" {
  description = "Consumers no candidate offers what they ask within the ceiling."
  value       = sort([for c, sorted in local.choices : c if length(sorted) == 0])
}
