# The clusters published in DNS under clusters.example.com, as DNS-SD records, e.g.:
#   _liqo._tcp.clusters.example.com.      PTR rome._liqo._tcp.clusters.example.com.
#   rome._liqo._tcp.clusters.example.com. SRV 0 0 6443 api.rome.example.com.
#   rome._liqo._tcp.clusters.example.com. TXT "cluster-id=cl-rome" "pod-cidr=10.1.0.0/16"
# DNS says where the clusters are, never how to log in: the credentials come from elsewhere
# (here a kubeconfig file per cluster, by instance name).
variable "kubeconfigs" {
  description = "Path of each discovered cluster's kubeconfig, by instance name (e.g. rome)."
  type        = map(string)
}

# Discovery needs no cluster: it runs in a provider block of its own, whose results configure
# the fleet's provider block (a provider block cannot depend on its own data sources).
provider "liqo" {
  alias = "discovery"
}

data "liqo_dns_discovery" "fleet" {
  provider   = liqo.discovery
  domain     = "clusters.example.com"
  nameserver = "10.0.0.53:53" # optional; default: the system's nameservers
  timeout    = "10s"          # optional; default: 5s
}

locals {
  # The discovered clusters we have credentials for, by instance name.
  fleet = {
    for c in data.liqo_dns_discovery.fleet.clusters : c.name => c
    if contains(keys(var.kubeconfigs), c.name)
  }
}

# One provider block serves the fleet: its clusters map built with a for expression, the API
# server from DNS (overriding the kubeconfig's).
provider "liqo" {
  clusters = {
    for name, c in local.fleet : name => {
      config_path = var.kubeconfigs[name]
      host        = c.api_server_url
    }
  }
}

# What each discovered cluster says about itself; its ID must be the one DNS publishes.
data "liqo_cluster" "member" {
  for_each = local.fleet
  cluster  = each.key

  lifecycle {
    postcondition {
      condition     = self.cluster_id == each.value.cluster_id
      error_message = "DNS publishes ${each.key} with cluster-id=${each.value.cluster_id}, but that cluster's ID is ${self.cluster_id}: fix its TXT record."
    }
  }
}

output "fleet" {
  value = {
    for name, c in local.fleet : name => {
      cluster_id = c.cluster_id
      api        = c.api_server_url
      pod_cidr   = lookup(c.txt, "pod-cidr", null)
      version    = data.liqo_cluster.member[name].kubernetes_version
    }
  }
}
