# The clusters announced on the local link over multicast DNS (_liqo._tcp.local.), as controller
# managers started with --lan-discovery (chart value lanDiscovery.enabled=true) announce them.
# Discovery needs no cluster: a provider block of its own.
provider "liqo" {
  alias = "discovery"
}

data "liqo_lan_discovery" "here" {
  provider  = liqo.discovery
  interface = "eth0" # optional; default: the default multicast interface
  timeout   = "5s"   # optional; default: 3s, at most 1m
}

output "announced" {
  value = { for c in data.liqo_lan_discovery.here.clusters : c.cluster_id => c.api_server_url }
}
