# A plan the liqo provider refuses, even mocked: Terraform has the real provider validate each
# resource under mock_provider too. terraform test cannot expect a provider's error
# (expect_failures covers only custom conditions: variable validations, preconditions, checks),
# so this run fails; the repository's Go test (test/e2e) runs each file of this folder on its
# own,
#   terraform test -test-directory=tests/rejected -filter=tests/rejected/<file>
# and checks that it fails with the messages of its expect-error lines.
#
# expect-error: Invalid CIDR
# expect-error: "10.201.0.0/33" is not a CIDR such as 10.244.0.0/16

mock_provider "liqo" {
  alias = "consumer"
}

mock_provider "liqo" {
  alias = "provider"
}

run "provider_pod_cidr_is_not_a_cidr" {
  command = plan

  variables {
    consumer_kubeconfig = "not-read/consumer.kubeconfig"
    provider_kubeconfig = "not-read/provider.kubeconfig"
    provider_pod_cidr   = "10.201.0.0/33"
  }
}
