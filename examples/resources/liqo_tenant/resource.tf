# Provider side: the consumer cl-consumer as a tenant of this cluster (the "provider" key of the
# provider block's clusters map). Declarative peering has no handshake, hence TolerateNoHandshake.
resource "liqo_tenant_namespace" "consumer" {
  cluster           = "provider"
  remote_cluster_id = "cl-consumer"
}

resource "liqo_tenant" "consumer" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.consumer.name
  consumer_cluster_id = "cl-consumer"
  authz_policy        = "TolerateNoHandshake"
  tenant_condition    = "Active" # "Cordoned" stops new ResourceSlices, "Drained" evicts the workloads
}

# With a handshake, pass the consumer's public key, CSR and signed nonce (base64):
#   public_key = base64encode(file("consumer.pub"))
#   csr        = base64encode(file("consumer.csr"))
#   signature  = base64encode(file("nonce.sig"))
