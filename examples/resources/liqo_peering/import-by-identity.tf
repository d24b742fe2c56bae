# By identity (Terraform >= 1.12): the two keys of the provider's clusters map.
import {
  to = liqo_peering.example
  identity = {
    consumer_cluster = "consumer"
    provider_cluster = "provider"
  }
}
