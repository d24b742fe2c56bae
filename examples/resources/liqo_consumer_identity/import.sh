# Import ID: [cluster/]namespace/name of the RoleBinding. A private key cannot be imported: the
# next apply issues new credentials (the plan shows a replacement).
terraform import liqo_consumer_identity.consumer provider/liqo-tenant-cl-consumer/liqo-consumer-cl-consumer
