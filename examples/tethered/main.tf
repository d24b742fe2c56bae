# Seed 004's tethered mode: the home cluster (a laptop, here the sandbox's "consumer") peers with
# exactly one foreign cluster (the corporate one, here "provider"), which runs the home's
# workloads and may use all of the home's nodes. mode = "autonomous" ends it: the offloaded
# namespaces come home and the foreign cluster's use of the home's nodes ends; the home keeps its
# peering with the foreign cluster as a plain consumer.

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
    home    = { config_path = var.home_kubeconfig }
    foreign = { config_path = var.foreign_kubeconfig }
  }
}

# The home's workloads run on the foreign cluster: its virtual node on the home.
resource "liqo_peering" "home_on_foreign" {
  consumer_cluster = "home"
  provider_cluster = "foreign"
  networking       = var.networking
  gateway = {
    service_type = var.gateway_service_type
  }

  # What the home asks of the foreign cluster for its workloads.
  cpu    = var.cpu
  memory = var.memory
  pods   = var.pods
}

# Every namespace of the home (but Kubernetes' and Liqo's) offloaded to the foreign cluster,
# with the Remote strategy: the foreign cluster schedules the home's workloads. Refused when
# the home offers resources to another cluster, or is tethered already.
resource "liqo_tethering" "home" {
  count              = var.mode == "tethered" ? 1 : 0
  cluster            = "home"
  foreign_cluster_id = liqo_peering.home_on_foreign.provider_cluster_id
}

# The foreign cluster's use of the home's nodes: a slice of class tethered, which the home
# grants in full to the cluster it is tethered to (and to no other).
resource "liqo_peering" "foreign_on_home" {
  count                = var.mode == "tethered" ? 1 : 0
  consumer_cluster     = "foreign"
  provider_cluster     = "home"
  resource_slice_class = "tethered"
  networking           = var.networking
  # The same gateway as the other direction's: they share the tunnel.
  gateway = {
    service_type = var.gateway_service_type
  }
  depends_on = [liqo_tethering.home]
}
