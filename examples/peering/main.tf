# One liqo_peering: the consumer cluster gets a virtual node backed by resources of the
# provider cluster; what `liqoctl peer` does, in one resource. With `make sandbox`, the
# kubeconfigs are in .sandbox/ and `terraform apply` here (with TF_CLI_CONFIG_FILE set as the
# sandbox says) peers its two clusters.

terraform {
  required_version = ">= 1.5"
  required_providers {
    liqo = {
      source = "peerkit/liqo"
    }
  }
}

# Both clusters in one provider block: liqo_peering names them by key.
provider "liqo" {
  clusters = {
    consumer = { config_path = var.consumer_kubeconfig }
    provider = { config_path = var.provider_kubeconfig }
  }
}

resource "liqo_peering" "this" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"

  # The WireGuard tunnel between the pod networks (gateway server on the provider, client on
  # the consumer). Turn it off where the gateways cannot run.
  networking = var.networking

  # In-band control plane: the consumer's controllers reach the provider's API server through
  # the tunnel (the provider's API-server proxy), for a provider they cannot reach directly.
  in_band = var.in_band

  # How the provider exposes its gateway server: a LoadBalancer Service (the sandbox gives it
  # an address), or NodePort on clusters without a load balancer.
  gateway = {
    service_type = var.gateway_service_type
  }

  # What the consumer asks of the provider: the virtual node offers what is granted. Changing
  # these re-negotiates the peering in place.
  cpu    = var.cpu
  memory = var.memory
  pods   = var.pods

  timeouts {
    create = "5m"
  }
}
