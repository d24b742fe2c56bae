# The consumer cluster peers with the provider cluster (both keys of the provider block's
# clusters map) and gets a virtual node with the resources the provider grants.
resource "liqo_peering" "example" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"

  cpu    = "4"
  memory = "8Gi"
  pods   = "110"
  resources = {
    "nvidia.com/gpu" = "1"
  }

  # The WireGuard tunnel between the two pod networks (default: on, LoadBalancer on 51840).
  gateway = {
    service_type = "NodePort"
    node_port    = 30051
  }

  timeouts {
    create = "5m"
  }
}

# The same resources taken on an offer of the provider (data "liqo_offers" lists them): refused at
# apply above the ceiling; else a contract both clusters sign, which the provider's grant follows.
resource "liqo_peering" "on_offer" {
  consumer_cluster = "consumer"
  provider_cluster = "gpu_provider"

  cpu    = "4"
  memory = "8Gi"
  pods   = "110"

  offer = {
    name              = "gpu-small"
    max_cost_per_hour = "2.50"
    duration          = "720h" # renewal: a longer duration, applied in place
  }
}

output "virtual_node" {
  value = liqo_peering.example.virtual_node_name
}

output "status" {
  value = liqo_peering.example.status # { networking, authentication, offloading } (the latency: data "liqo_foreign_cluster")
}
