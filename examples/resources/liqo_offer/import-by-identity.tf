# By identity (Terraform >= 1.12); cluster is a key of the provider's clusters map, left out for
# the provider block's own connection.
import {
  to = liqo_offer.gpus
  identity = {
    cluster   = "provider"
    namespace = "liqo"
    name      = "gpus"
  }
}
