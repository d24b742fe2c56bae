# Consumer side: the offers cl-provider made to this cluster (the "consumer" key of the provider
# block's clusters map), read on cl-provider with the consumer's own identity, so that a plan
# shows the price before anything is granted.
data "liqo_offers" "provider" {
  cluster             = "consumer"
  provider_cluster_id = "cl-provider"
}

output "cpu_price_per_hour" {
  value = {
    for o in data.liqo_offers.provider.offers : o.name => try("${o.prices["cpu"].amount} ${o.currency}", "free")
  }
}
