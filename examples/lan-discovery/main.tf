# A fleet found by LAN discovery: the clusters announced on this link (controller managers with
# --lan-discovery, chart value lanDiscovery.enabled=true) that we have credentials for.
# An announcement says where a cluster is, never how to log in: the credentials come from
# elsewhere (here a kubeconfig file per cluster, by cluster ID).
variable "kubeconfigs" {
  description = "Path of each discovered cluster's kubeconfig, by cluster ID (e.g. cl-rome)."
  type        = map(string)
}

variable "interface" {
  description = "The network interface the clusters are announced on; null: the default multicast one."
  type        = string
  default     = null
}

# Discovery needs no cluster: it runs in a provider block of its own, whose results configure
# the fleet's provider block (a provider block cannot depend on its own data sources).
provider "liqo" {
  alias = "discovery"
}

data "liqo_lan_discovery" "fleet" {
  provider  = liqo.discovery
  interface = var.interface
  timeout   = "5s"
}

locals {
  # The announced clusters we have credentials for, by cluster ID.
  fleet = {
    for c in data.liqo_lan_discovery.fleet.clusters : c.cluster_id => c
    if contains(keys(var.kubeconfigs), c.cluster_id)
  }
}

# One provider block serves the fleet: the API server from the announcement (overriding the
# kubeconfig's). liqo_dns_discovery's clusters have the same shape: swap the data source to
# find the fleet in DNS instead.
provider "liqo" {
  clusters = {
    for id, c in local.fleet : id => {
      config_path = var.kubeconfigs[id]
      host        = c.api_server_url
    }
  }
}

# What each discovered cluster says about itself; its ID must be the one it announces.
data "liqo_cluster" "member" {
  for_each = local.fleet
  cluster  = each.key

  lifecycle {
    postcondition {
      condition     = self.cluster_id == each.key
      error_message = "${each.value.api_server_url} is announced as ${each.key}, but that cluster's ID is ${self.cluster_id}."
    }
  }
}

output "fleet" {
  value = {
    for id, c in local.fleet : id => {
      api     = c.api_server_url
      version = lookup(c.txt, "version", null)
      shares  = lookup(c.txt, "shares", null)
    }
  }
}
