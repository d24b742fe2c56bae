# Import ID: <consumer_cluster>/<provider_cluster>, two keys of the provider's clusters map.
terraform import liqo_peering.example consumer/provider
