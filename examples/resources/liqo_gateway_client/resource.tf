# Consumer side: the WireGuard client connecting to the provider's gateway server (seed 003).
resource "liqo_gateway_client" "provider" {
  cluster           = "consumer"
  namespace         = "liqo-tenant-cl-provider"
  remote_cluster_id = "cl-provider"
  # name = "client" (default)

  # Where the server is: what the provider's controllers report ...
  endpoint_addresses = liqo_gateway_server.consumer.endpoint_addresses
  endpoint_port      = liqo_gateway_server.consumer.endpoint_port
  # ... or, with a fixed node port, known in advance:
  #   endpoint_addresses = ["172.18.0.3"] # a node of the provider cluster
  #   endpoint_port      = 30742
  endpoint_protocol = "UDP" # default

  mtu        = 1340
  secret_ref = liqo_gateway_keys.consumer.name

  # client_template defaults to { kind = "WgGatewayClientTemplate", name = "wireguard-client", namespace = "liqo" }
}
