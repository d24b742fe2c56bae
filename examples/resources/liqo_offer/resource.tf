# Provider side: what this cluster (the "provider" key of the provider block's clusters map) is
# willing to share and at what price, seed 004's advertisement. Its controller manager publishes
# the offer to the tenant namespace of every consumer it is made to.
resource "liqo_offer" "gpus" {
  cluster = "provider"
  name    = "gpus"
  # namespace defaults to the cluster's Liqo namespace (liqo).

  resources = {
    cpu              = "16"
    memory           = "64Gi"
    "nvidia.com/gpu" = "2"
  }
  currency = "EUR"
  prices = {
    cpu              = { amount = "0.02" }               # per CPU and hour
    memory           = { amount = "0.004", per = "1Gi" } # per GiB and hour
    "nvidia.com/gpu" = { amount = "1.20" }               # per GPU and hour
  }
  minimum      = { cpu = "1" }
  maximum      = { cpu = "8", "nvidia.com/gpu" = "1" }
  min_duration = "1h"
  max_duration = "720h"
  consumers    = ["cl-consumer"] # leave out to offer to every consumer
}
