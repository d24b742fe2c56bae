# Import ID: [cluster/]namespace/name (cluster is a key of the provider's clusters map, omitted
# for the provider block's own connection).
terraform import liqo_offer.gpus provider/liqo/gpus
