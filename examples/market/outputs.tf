output "contract" {
  description = "The contract as the consumer keeps it: phase, end and the cost accrued so far."
  value = {
    phase        = data.liqo_contract.this.phase
    ends         = data.liqo_contract.this.end
    accrued_cost = "${coalesce(data.liqo_contract.this.accrued_cost, "0")} ${data.liqo_contract.this.currency}"
  }
}

output "offers" {
  description = "The provider's offers to this consumer: name => CPU price per hour."
  value       = { for o in data.liqo_offers.provider.offers : o.name => try("${o.prices["cpu"].amount} ${o.currency}", "free") }
}
