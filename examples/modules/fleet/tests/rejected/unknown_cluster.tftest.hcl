# A plan the real liqo provider refuses without reaching a cluster: a member that is not a key of
# the provider's clusters map. The provider checks it when it plans, which a mock does not do.
# terraform test cannot expect a provider's error (expect_failures covers only custom
# conditions: variable validations, preconditions, checks), so this run fails; the repository's
# Go test (test/e2e) runs each file of this folder on its own,
#   terraform test -test-directory=tests/rejected -filter=tests/rejected/<file>
# and checks that it fails with the messages of its expect-error lines.
#
# expect-error: Unknown cluster
# expect-error: cluster "edge-2" is not a key of the provider's `clusters` map (valid keys: "edge-1", "hub")

# The caller's provider block; its kubeconfigs are never read (planning a new peering reaches
# no cluster).
provider "liqo" {
  clusters = {
    hub    = { config_path = "not-read/hub.kubeconfig" }
    edge-1 = { config_path = "not-read/edge-1.kubeconfig" }
  }
}

run "member_missing_from_the_clusters_map" {
  command = plan

  variables {
    members = ["hub", "edge-1", "edge-2"]
    hub     = "hub"
  }
}
