# By identity (Terraform >= 1.12); cluster is a key of the provider's clusters map, left out for
# the provider block's own connection. private_key_wo_version is not imported: if the
# configuration sets it, the next apply writes the configured key (or a new generated one).
import {
  to = liqo_gateway_keys.consumer
  identity = {
    cluster   = "consumer"
    namespace = "liqo-tenant-cl-provider"
    name      = "gw-keys"
  }
}
