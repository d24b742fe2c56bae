# By identity (Terraform >= 1.12): cluster is a key of the provider's clusters map, left out for
# the provider block's own connection; namespace is the cluster's Liqo namespace and name the
# ConfigMap's fixed name.
import {
  to = liqo_tethering.laptop
  identity = {
    cluster   = "laptop"
    namespace = "liqo"
    name      = "liqo-tethering"
  }
}
