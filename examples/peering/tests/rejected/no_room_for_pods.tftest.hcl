# A plan the liqo provider refuses, even mocked (see invalid_quantity.tftest.hcl): a virtual node
# with room for no pod would be Ready and run nothing.
#
# expect-error: No room for any pod
# expect-error: pods = "0" gives a virtual node with room for no pod

mock_provider "liqo" {}

run "pods_is_zero" {
  command = plan

  variables {
    pods = "0"
  }
}
