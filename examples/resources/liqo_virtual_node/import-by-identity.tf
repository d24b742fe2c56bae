# By identity (Terraform >= 1.12); cluster is a key of the provider's clusters map, left out for
# the provider block's own connection.
import {
  to = liqo_virtual_node.gpu
  identity = {
    cluster   = "consumer"
    namespace = "liqo-tenant-cl-provider"
    name      = "provider-gpu"
  }
}
