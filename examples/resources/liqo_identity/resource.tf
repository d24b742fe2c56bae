# Consumer side: the credentials the provider cl-provider issued to this cluster, as an Identity
# and its kubeconfig Secret in the tenant namespace.
resource "liqo_tenant_namespace" "provider" {
  cluster           = "consumer"
  remote_cluster_id = "cl-provider"
}

# Terraform >= 1.11: write-only, never stored in the plan or the state. Bump the version to write
# a new kubeconfig (here it follows the certificate issued by liqo_consumer_identity).
resource "liqo_identity" "provider" {
  cluster                 = "consumer"
  namespace               = liqo_tenant_namespace.provider.name
  provider_cluster_id     = "cl-provider"
  type                    = "ControlPlane"
  remote_tenant_namespace = "liqo-tenant-cl-consumer" # the consumer's tenant namespace in the provider
  kubeconfig_wo           = liqo_consumer_identity.consumer.kubeconfig
  kubeconfig_wo_version   = parseint(formatdate("YYYYMMDDhhmmss", liqo_consumer_identity.consumer.certificate_expires_at), 10)
}

# Terraform < 1.11: the sensitive attribute (hidden in plans, but stored in the state).
# resource "liqo_identity" "provider" {
#   ...
#   kubeconfig = file("provider-kubeconfig.yaml")
# }
