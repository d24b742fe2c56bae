# A plan the liqo provider refuses, even mocked: Terraform has the real provider validate each
# resource under mock_provider too. terraform test cannot expect a provider's error
# (expect_failures covers only custom conditions: variable validations, preconditions, checks),
# so this run fails; the repository's Go test (test/e2e) runs each file of this folder on its
# own,
#   terraform test -test-directory=tests/rejected -filter=tests/rejected/<file>
# and checks that it fails with the messages of its expect-error lines.
#
# expect-error: Invalid quantity
# expect-error: "lots" is not a Kubernetes quantity such as 4, 500m or 8Gi

mock_provider "liqo" {}

run "cpu_is_not_a_quantity" {
  command = plan

  variables {
    cpu = "lots"
  }
}
