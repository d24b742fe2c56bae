# The identity's kubeconfig_wo_version follows its certificate's expiry, so that a renewed
# certificate's kubeconfig is written. A file of its own (each test file starts from an empty
# state): a mock's values apply when a resource is created, not to one already in the state, and
# a second state in the same file (state_key) is a Terraform-only feature that OpenTofu lacks.
# The mocks are declarative.tftest.hcl's, with a later expiry.

mock_provider "liqo" {
  alias = "consumer"

  mock_resource "liqo_gateway_keys" {
    defaults = { name = "gw-keys", public_key = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=" }
  }
}

mock_provider "liqo" {
  alias = "provider"

  mock_resource "liqo_gateway_keys" {
    defaults = { name = "gw-keys", public_key = "ZWZnaGlqa2xtbm9wcXJzdHV2d3h5ent8fX5/gIGCg4Q=" }
  }

  mock_resource "liqo_consumer_identity" {
    defaults = {
      certificate_expires_at = "2031-06-30T12:00:00Z"
      kubeconfig             = "apiVersion: v1\nkind: Config\n"
    }
  }
}

override_resource {
  target = liqo_tenant_namespace.on_consumer
  values = { name = "liqo-tenant-cl-provider" }
}

override_resource {
  target = liqo_tenant_namespace.on_provider
  values = { name = "liqo-tenant-cl-consumer" }
}

variables {
  consumer_kubeconfig = "not-read/consumer.kubeconfig"
  provider_kubeconfig = "not-read/provider.kubeconfig"
}

run "the_kubeconfig_version_follows_the_expiry" {
  assert {
    condition     = liqo_identity.this.kubeconfig_wo_version == 20310630120000
    error_message = "kubeconfig_wo_version must follow the certificate's expiry, so that a renewed certificate's kubeconfig is written"
  }
}
