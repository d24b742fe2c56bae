# By identity (Terraform >= 1.12): cluster is a key of the provider's clusters map, left out for
# the provider block's own connection. The namespace must carry the labels
# liqo.io/tenant-namespace=true and liqo.io/remote-cluster-id.
import {
  to = liqo_tenant_namespace.provider
  identity = {
    cluster = "consumer"
    name    = "liqo-tenant-cl-provider"
  }
}
