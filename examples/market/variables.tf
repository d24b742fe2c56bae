variable "consumer_kubeconfig" {
  description = "Kubeconfig of the consumer cluster (the sandbox's by default)."
  type        = string
  default     = "../../.sandbox/consumer.kubeconfig"
}

variable "provider_kubeconfig" {
  description = "Kubeconfig of the provider cluster (the sandbox's by default)."
  type        = string
  default     = "../../.sandbox/provider.kubeconfig"
}

variable "networking" {
  description = "Connect the clusters' pod networks through the gateways; false where the gateways do not run."
  type        = bool
  default     = true
}

variable "cpu" {
  description = "CPU taken on the offer."
  type        = string
  default     = "2"
}

variable "memory" {
  description = "Memory taken on the offer."
  type        = string
  default     = "4Gi"
}

variable "max_cost_per_hour" {
  description = "The most the consumer pays per hour for what it takes, in the offer's currency (2 CPUs and 4Gi at the offer's prices: 0.10)."
  type        = string
  default     = "0.10"
}

variable "duration" {
  description = "How long the contract runs from its start; a new value renews it in place."
  type        = string
  default     = "720h"
}
