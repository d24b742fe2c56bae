# Declarative peering (Liqo's seed 003), resource by resource, across two provider aliases:
# the consumer asks the provider for resources; the network, the authentication and the
# offloading are each declared on both sides. With `make sandbox`, the kubeconfigs are in .sandbox/.

terraform {
  required_version = ">= 1.11" # write-only attributes carry the consumer's kubeconfig
  required_providers {
    liqo = {
      source = "peerkit/liqo"
    }
  }
}

provider "liqo" {
  alias       = "consumer"
  config_path = var.consumer_kubeconfig
}

provider "liqo" {
  alias       = "provider"
  config_path = var.provider_kubeconfig
}

# --- Tenant namespaces: one per peering, on each side --------------------------------------

resource "liqo_tenant_namespace" "on_consumer" {
  provider          = liqo.consumer
  remote_cluster_id = var.provider_cluster_id
}

resource "liqo_tenant_namespace" "on_provider" {
  provider          = liqo.provider
  remote_cluster_id = var.consumer_cluster_id
}

# --- Networking: each side holds the other's CIDRs and public key ---------------------------

resource "liqo_network_configuration" "on_consumer" {
  provider              = liqo.consumer
  namespace             = liqo_tenant_namespace.on_consumer.name
  remote_cluster_id     = var.provider_cluster_id
  remote_pod_cidrs      = [var.provider_pod_cidr]
  remote_external_cidrs = [var.provider_external_cidr]
}

resource "liqo_network_configuration" "on_provider" {
  provider              = liqo.provider
  namespace             = liqo_tenant_namespace.on_provider.name
  remote_cluster_id     = var.consumer_cluster_id
  remote_pod_cidrs      = [var.consumer_pod_cidr]
  remote_external_cidrs = [var.consumer_external_cidr]
}

# The private keys are generated when the Secrets are created and never reach the state.
resource "liqo_gateway_keys" "consumer" {
  provider          = liqo.consumer
  namespace         = liqo_tenant_namespace.on_consumer.name
  remote_cluster_id = var.provider_cluster_id
}

resource "liqo_gateway_keys" "provider" {
  provider          = liqo.provider
  namespace         = liqo_tenant_namespace.on_provider.name
  remote_cluster_id = var.consumer_cluster_id
}

resource "liqo_public_key" "on_consumer" {
  provider          = liqo.consumer
  namespace         = liqo_tenant_namespace.on_consumer.name
  remote_cluster_id = var.provider_cluster_id
  public_key        = liqo_gateway_keys.provider.public_key
}

resource "liqo_public_key" "on_provider" {
  provider          = liqo.provider
  namespace         = liqo_tenant_namespace.on_provider.name
  remote_cluster_id = var.consumer_cluster_id
  public_key        = liqo_gateway_keys.consumer.public_key
}

# The server gateway on the provider, exposed on a fixed node port so the client can be
# configured in advance; the client gateway on the consumer connects to it.
resource "liqo_gateway_server" "this" {
  provider          = liqo.provider
  namespace         = liqo_tenant_namespace.on_provider.name
  remote_cluster_id = var.consumer_cluster_id
  service_type      = "NodePort"
  port              = 51840
  node_port         = 30742
  mtu               = 1340
  secret_ref        = liqo_gateway_keys.provider.name
}

resource "liqo_gateway_client" "this" {
  provider           = liqo.consumer
  namespace          = liqo_tenant_namespace.on_consumer.name
  remote_cluster_id  = var.provider_cluster_id
  endpoint_addresses = [var.gateway_address]
  endpoint_port      = 30742
  endpoint_protocol  = "UDP"
  mtu                = 1340
  secret_ref         = liqo_gateway_keys.consumer.name
}

# --- Authentication: the provider issues the consumer's credentials -------------------------

resource "liqo_consumer_identity" "this" {
  provider            = liqo.provider
  namespace           = liqo_tenant_namespace.on_provider.name
  consumer_cluster_id = var.consumer_cluster_id
}

resource "liqo_tenant" "this" {
  provider            = liqo.provider
  namespace           = liqo_tenant_namespace.on_provider.name
  consumer_cluster_id = var.consumer_cluster_id
  authz_policy        = "TolerateNoHandshake" # no handshake in a declarative peering
  tenant_condition    = "Active"
}

resource "liqo_identity" "this" {
  provider                = liqo.consumer
  namespace               = liqo_tenant_namespace.on_consumer.name
  provider_cluster_id     = var.provider_cluster_id
  remote_tenant_namespace = liqo_tenant_namespace.on_provider.name
  type                    = "ControlPlane"
  kubeconfig_wo           = liqo_consumer_identity.this.kubeconfig
  # A renewed certificate has a new expiry: the new kubeconfig is written then.
  kubeconfig_wo_version = parseint(formatdate("YYYYMMDDhhmmss", liqo_consumer_identity.this.certificate_expires_at), 10)
}

# --- Offloading: ask for resources, extend a namespace -------------------------------------

resource "liqo_resource_slice" "this" {
  provider            = liqo.consumer
  name                = "test"
  namespace           = liqo_tenant_namespace.on_consumer.name
  provider_cluster_id = var.provider_cluster_id
  class               = "default"
  cpu                 = var.cpu
  memory              = var.memory

  depends_on = [liqo_identity.this, liqo_tenant.this]
}

resource "liqo_namespace_offloading" "this" {
  provider                   = liqo.consumer
  namespace                  = var.offloaded_namespace
  namespace_mapping_strategy = "DefaultName"
  pod_offloading_strategy    = "LocalAndRemote"

  # Destroyed before the credentials: the consumer removes its remote namespace on the provider
  # with them.
  depends_on = [liqo_resource_slice.this]
}
