# terraform apply -invoke=action.liqo_peering_test.tunnel
action "liqo_peering_test" "tunnel" {
  config {
    consumer_cluster = "consumer"
    provider_cluster = "provider"
    max_latency      = "50ms"
  }
}
