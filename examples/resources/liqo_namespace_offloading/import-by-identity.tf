# By identity (Terraform >= 1.12): the namespace (its NamespaceOffloading is always named
# offloading); cluster is a key of the provider's clusters map, left out for the provider block's
# own connection.
import {
  to = liqo_namespace_offloading.demo
  identity = {
    cluster   = "consumer"
    namespace = "demo"
  }
}
