# Import ID: [cluster/]namespace/name of the Identity. The kubeconfig is not imported: the first
# apply after the import writes the configured one (an in-place update).
terraform import liqo_identity.provider consumer/liqo-tenant-cl-provider/controlplane-cl-provider
