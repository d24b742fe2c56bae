# Provider side: the WireGuard server the consumer's gateway client connects to (seed 003),
# exposed on a fixed node port so that the client can be configured in advance.
resource "liqo_gateway_server" "consumer" {
  cluster           = "provider"
  namespace         = "liqo-tenant-cl-consumer"
  remote_cluster_id = "cl-consumer"
  # name = "server" (default)

  port         = 51840 # default
  service_type = "NodePort"
  node_port    = 30742
  mtu          = 1340
  secret_ref   = liqo_gateway_keys.provider.name

  # The default template, as Liqo installs it:
  server_template = {
    kind      = "WgGatewayServerTemplate"
    name      = "wireguard-server"
    namespace = "liqo"
  }

  # Wait for the liqo controllers to report the endpoint (endpoint_addresses/port/protocol).
  wait_for_endpoint = true
  timeouts {
    create = "5m"
  }
}

# With a LoadBalancer instead:
#   service_type     = "LoadBalancer"
#   load_balancer_ip = "203.0.113.10"
