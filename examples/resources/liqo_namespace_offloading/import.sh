# Import ID: [cluster/]namespace (the NamespaceOffloading of a namespace is always named
# offloading; cluster is a key of the provider's clusters map, omitted for the provider block's
# own connection).
terraform import liqo_namespace_offloading.demo consumer/demo
