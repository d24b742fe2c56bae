# Consumer side: the contract liqo_peering's `offer` signed with cl-provider (named as the
# peering's slice, after the provider's cluster ID), read on this cluster (the "consumer" key of
# the provider block's clusters map). Phase and accrued cost change on their own: they are read
# here, not kept in liqo_peering's state.
data "liqo_contract" "provider" {
  cluster             = "consumer"
  provider_cluster_id = "cl-provider"
}

output "contract" {
  value = {
    phase        = data.liqo_contract.provider.phase
    ends         = data.liqo_contract.provider.end
    accrued_cost = "${coalesce(data.liqo_contract.provider.accrued_cost, "0")} ${data.liqo_contract.provider.currency}"
  }
}
