# Import ID: [cluster/]namespace/name (cluster is a key of the provider's clusters map, omitted
# for the provider block's own connection). private_key_wo_version is not imported: if the
# configuration sets it, the next apply writes the configured key (or a new generated one).
terraform import liqo_gateway_keys.consumer consumer/liqo-tenant-cl-provider/gw-keys
