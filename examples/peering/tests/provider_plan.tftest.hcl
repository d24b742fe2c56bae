# The real liqo provider plans without a cluster: planning a new peering needs none (where it
# can reach the cluster that would host the gateway server, it also checks that the gateway's
# port is free there). A plan run with it checks what a mock cannot: the defaults of the
# provider's schema, and that both cluster keys are in its clusters map. The kubeconfig paths
# below do not exist.

variables {
  consumer_kubeconfig = "not-read/consumer.kubeconfig"
  provider_kubeconfig = "not-read/provider.kubeconfig"
}

run "plans_the_schema_defaults" {
  command = plan

  assert {
    condition     = liqo_peering.this.gateway.port == 51840 && liqo_peering.this.gateway.mtu == 1340
    error_message = "the gateway defaults to UDP port 51840 and MTU 1340"
  }
  assert {
    condition     = liqo_peering.this.gateway.node_port == null
    error_message = "without node_port the cluster picks the node port"
  }
}
