# The Identity, by identity (Terraform >= 1.12). The kubeconfig is not imported: set kubeconfig_wo
# and kubeconfig_wo_version (or kubeconfig); the first apply after the import writes it (an
# in-place update).
import {
  to = liqo_identity.provider
  identity = {
    cluster   = "consumer"
    namespace = "liqo-tenant-cl-provider"
    name      = "controlplane-cl-provider"
  }
}
