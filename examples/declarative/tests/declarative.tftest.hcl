# Unit tests of the declarative example with mocked liqo providers, one per alias: no cluster is
# reached, so they run anywhere with `terraform test` in the example's folder (Terraform >= 1.11
# for the write-only kubeconfig). They check that each side gets the other's CIDRs, public key,
# tenant namespace and credentials.
#
# What the provider would compute comes from the mocks: mock_resource gives each side's gateway
# keys a name and a public key and the consumer identity its certificate expiry (the identity's
# kubeconfig_wo_version is derived from it); override_resource fixes the tenant namespaces'
# names. The real provider still validates what the resources are given: a made-up string would
# not pass as a WireGuard key, and OpenTofu's random strings (mixed case) not as Kubernetes names.

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
      certificate_expires_at = "2030-06-30T12:00:00Z"
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

run "each_side_holds_the_other" {
  assert {
    condition = (liqo_network_configuration.on_consumer.remote_pod_cidrs == tolist(["10.201.0.0/16"])
      && liqo_network_configuration.on_consumer.remote_external_cidrs == tolist(["10.71.0.0/16"])
      && liqo_network_configuration.on_provider.remote_pod_cidrs == tolist(["10.200.0.0/16"])
    && liqo_network_configuration.on_provider.remote_external_cidrs == tolist(["10.70.0.0/16"]))
    error_message = "each side's network configuration must hold the other's pod and external CIDRs"
  }
  assert {
    condition = (liqo_public_key.on_consumer.public_key == "ZWZnaGlqa2xtbm9wcXJzdHV2d3h5ent8fX5/gIGCg4Q="
    && liqo_public_key.on_provider.public_key == "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=")
    error_message = "each side must hold the other's public key"
  }
  assert {
    condition     = liqo_network_configuration.on_consumer.namespace == "liqo-tenant-cl-provider" && liqo_tenant.this.namespace == "liqo-tenant-cl-consumer"
    error_message = "each side's objects must be in its tenant namespace"
  }
  assert {
    condition     = liqo_gateway_client.this.endpoint_port == liqo_gateway_server.this.node_port
    error_message = "the client must connect to the server's node port"
  }
  assert {
    condition     = liqo_identity.this.remote_tenant_namespace == "liqo-tenant-cl-consumer"
    error_message = "the consumer's identity must name its tenant namespace on the provider"
  }
  assert {
    condition     = liqo_identity.this.kubeconfig_wo_version == 20300630120000
    error_message = "the kubeconfig's version must follow the certificate's expiry"
  }
}

run "the_kubeconfig_version_follows_the_expiry" {
  # The identity is made again, as a renewal would: an override applies when a resource is
  # created, not to one already in the state. (Not a state of its own, state_key: Terraform-only.)
  plan_options {
    replace = [liqo_consumer_identity.this]
  }

  override_resource {
    target = liqo_consumer_identity.this
    values = { certificate_expires_at = "2031-06-30T12:00:00Z" }
  }

  assert {
    condition     = liqo_identity.this.kubeconfig_wo_version == 20310630120000
    error_message = "kubeconfig_wo_version must follow the certificate's expiry, so that a renewed certificate's kubeconfig is written"
  }
}
