# The RoleBinding, by identity (Terraform >= 1.12). A private key cannot be imported: the next
# apply issues new credentials (the plan shows a replacement).
import {
  to = liqo_consumer_identity.consumer
  identity = {
    cluster   = "provider"
    namespace = "liqo-tenant-cl-consumer"
    name      = "liqo-consumer-cl-consumer"
  }
}
