# Provider side: credentials for the consumer cl-consumer, bound to a least-privilege Role in its
# tenant namespace. The private key is generated at apply; `kubeconfig` is sensitive and is
# stored in the Terraform state: keep the state encrypted and access-controlled.
resource "liqo_tenant_namespace" "consumer" {
  cluster           = "provider"
  remote_cluster_id = "cl-consumer"
}

resource "liqo_consumer_identity" "consumer" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.consumer.name
  consumer_cluster_id = "cl-consumer"

  # Optional:
  # role_name      = "liqo-remote-controlplane"        # bind Liqo's ClusterRole instead of the managed Role
  # api_server_url = "https://provider.example.com:6443" # the address the consumer reaches the API server at
  validity_hours = 8760   # requested; the signer may cap it
  renew_before   = "720h" # the plan re-issues the credentials within 30 days of expiry
}

# Consumer side: store the credentials without putting them in the consumer's state
# (write-only attribute, Terraform >= 1.11). The version follows the certificate, so a re-issue
# writes the new kubeconfig.
resource "liqo_tenant_namespace" "provider" {
  cluster           = "consumer"
  remote_cluster_id = "cl-provider"
}

resource "liqo_identity" "provider" {
  cluster                 = "consumer"
  namespace               = liqo_tenant_namespace.provider.name
  provider_cluster_id     = "cl-provider"
  remote_tenant_namespace = liqo_tenant_namespace.consumer.name
  kubeconfig_wo           = liqo_consumer_identity.consumer.kubeconfig
  kubeconfig_wo_version   = parseint(formatdate("YYYYMMDDhhmmss", liqo_consumer_identity.consumer.certificate_expires_at), 10)
}
