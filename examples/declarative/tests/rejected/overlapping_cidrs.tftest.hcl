# A plan the liqo provider refuses, even mocked (see invalid_cidr.tftest.hcl): a peer's pod CIDR
# inside its external CIDR, which the controllers would remap apart without a word.
#
# expect-error: Overlapping remote CIDRs
# expect-error: remote_pod_cidrs 10.70.0.0/24 overlaps remote_external_cidrs 10.70.0.0/16

mock_provider "liqo" {
  alias = "consumer"
}

mock_provider "liqo" {
  alias = "provider"
}

run "provider_pod_cidr_inside_its_external_cidr" {
  command = plan

  variables {
    consumer_kubeconfig    = "not-read/consumer.kubeconfig"
    provider_kubeconfig    = "not-read/provider.kubeconfig"
    provider_pod_cidr      = "10.70.0.0/24"
    provider_external_cidr = "10.70.0.0/16"
  }
}
