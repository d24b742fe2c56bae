# Unit tests of the liqoctl-import example with a mocked liqo provider: no cluster is reached, so
# they run anywhere with `terraform test` in the example's folder (Terraform >= 1.7). A mock
# cannot import: override_resource stands for the peering liqoctl made, as the provider would
# read it.

mock_provider "liqo" {}

override_resource {
  target = liqo_peering.this
  values = {
    id                = "consumer/provider"
    virtual_node_name = "provider"
    status            = { networking = "Established", authentication = "Established", offloading = "Ready" }
  }
}

run "adopts_the_liqoctl_peering" {
  assert {
    condition     = liqo_peering.this.networking && [liqo_peering.this.cpu, liqo_peering.this.memory, liqo_peering.this.pods] == ["4", "8Gi", "110"]
    error_message = "by default the resource is written as liqoctl peers: networking on, and what the provider grants by default"
  }
  assert {
    condition     = liqo_peering.this.id == "consumer/provider"
    error_message = "the import block adopts the peering <consumer_cluster>/<provider_cluster>"
  }
  assert {
    condition     = output.virtual_node == "provider" && output.status.offloading == "Ready"
    error_message = "outputs virtual_node and status must be the adopted peering's"
  }
}
