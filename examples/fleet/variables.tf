variable "kubeconfigs" {
  description = "The fleet's clusters: name => kubeconfig path (the sandbox's three by default)."
  type        = map(string)
  default = {
    consumer   = "../../.sandbox/consumer.kubeconfig"
    provider   = "../../.sandbox/provider.kubeconfig"
    provider-2 = "../../.sandbox/provider-2.kubeconfig"
  }
}

variable "topology" {
  description = "\"hub-and-spoke\" (the consumer consumes from the others) or \"full-mesh\"."
  type        = string
  default     = "hub-and-spoke"
}

variable "networking" {
  description = "Connect the clusters' pod networks through the gateways; false where the gateways do not run."
  type        = bool
  default     = true
}

variable "max_cost_per_hour" {
  description = "Place each consumer on its cheapest provider within this cost per hour (a decimal, in the offers' currency); null: peer with every provider of the topology, on no offer."
  type        = string
  default     = null
}
