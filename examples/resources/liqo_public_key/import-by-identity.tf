# By identity (Terraform >= 1.12); cluster is a key of the provider's clusters map, left out for
# the provider block's own connection.
import {
  to = liqo_public_key.consumer
  identity = {
    cluster   = "provider"
    namespace = "liqo-tenant-cl-consumer"
    name      = "gw-publickey"
  }
}
