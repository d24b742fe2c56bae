# The consumer's public key, known by the provider's gateway (and vice versa).
resource "liqo_public_key" "consumer" {
  cluster           = "provider"
  namespace         = "liqo-tenant-cl-consumer"
  remote_cluster_id = "cl-consumer"
  public_key        = liqo_gateway_keys.consumer.public_key # or a literal: "PcoRfoRt4C0tBDowW2H6PoYvAu0z/in7el/5EHaBLQo="
  # name = "gw-publickey" (default)
}

resource "liqo_public_key" "provider" {
  cluster           = "consumer"
  namespace         = "liqo-tenant-cl-provider"
  remote_cluster_id = "cl-provider"
  public_key        = liqo_gateway_keys.provider.public_key
}
