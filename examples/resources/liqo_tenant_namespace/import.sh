# A tenant namespace is imported by `[cluster/]name`: the key of the provider's clusters map
# (omitted for the provider block's own connection) and the namespace's name. The namespace must
# carry the labels liqo.io/tenant-namespace=true and liqo.io/remote-cluster-id.
terraform import liqo_tenant_namespace.provider consumer/liqo-tenant-cl-provider
