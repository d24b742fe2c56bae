# Unit tests of this example with a mocked liqo provider: no cluster is reached, so they run
# anywhere with `terraform test` in the example's folder (Terraform >= 1.7).
#
# Under mock_provider, Terraform still asks the real provider to validate each resource (its
# attribute validators and the resource's own checks run), but it neither configures the
# provider nor lets it plan or apply: attributes the provider computes are unknown at plan, and
# at apply they take the mock_resource defaults below (or made-up values).

mock_provider "liqo" {
  mock_resource "liqo_peering" {
    defaults = {
      virtual_node_name = "provider"
      granted           = { cpu = "2", memory = "4Gi", pods = "50" }
      status            = { networking = "Established", authentication = "Established", offloading = "Ready" }
    }
  }
}

run "plans_one_peering_with_the_defaults" {
  command = plan

  assert {
    condition     = liqo_peering.this.consumer_cluster == "consumer" && liqo_peering.this.provider_cluster == "provider"
    error_message = "the peering must name the consumer and provider keys of the provider's clusters map"
  }
  assert {
    condition     = liqo_peering.this.networking && liqo_peering.this.gateway.service_type == "LoadBalancer"
    error_message = "by default the peering has networking, its gateway server behind a LoadBalancer"
  }
  assert {
    condition     = [liqo_peering.this.cpu, liqo_peering.this.memory, liqo_peering.this.pods] == ["2", "4Gi", "50"]
    error_message = "by default the consumer asks for 2 CPUs, 4Gi and 50 pods"
  }
}

run "variables_reach_the_peering" {
  command = plan

  variables {
    networking           = false
    gateway_service_type = "NodePort"
    cpu                  = "500m"
    memory               = "1Gi"
    pods                 = "20"
  }

  assert {
    condition     = !liqo_peering.this.networking && liqo_peering.this.gateway.service_type == "NodePort"
    error_message = "networking and gateway_service_type must reach the peering"
  }
  assert {
    condition     = [liqo_peering.this.cpu, liqo_peering.this.memory, liqo_peering.this.pods] == ["500m", "1Gi", "20"]
    error_message = "cpu, memory and pods must reach the peering"
  }
}

run "outputs_show_the_peering" {
  # apply: the mock "creates" the peering with the defaults above.

  assert {
    condition     = output.virtual_node == "provider"
    error_message = "output virtual_node must be the peering's virtual_node_name"
  }
  assert {
    condition     = output.status.offloading == "Ready" && output.status.networking == "Established"
    error_message = "output status must be the peering's status"
  }
  assert {
    condition     = output.granted == tomap({ cpu = "2", memory = "4Gi", pods = "50" })
    error_message = "output granted must be what the provider granted"
  }
}
