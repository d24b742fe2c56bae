# Import ID: [cluster/]namespace/name (cluster is a key of the provider's clusters map, omitted
# for the provider block's own connection).
terraform import liqo_gateway_server.consumer provider/liqo-tenant-cl-consumer/server
