# A tethering is imported by `[cluster/]namespace/liqo-tethering`: the key of the provider's
# clusters map (omitted for the provider block's own connection), the cluster's Liqo namespace
# and the ConfigMap's fixed name.
terraform import liqo_tethering.laptop laptop/liqo/liqo-tethering
