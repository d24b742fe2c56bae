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
  description = "Whether liqoctl peered with networking (false for `liqoctl peer --networking-disabled`)."
  type        = bool
  default     = true
}

variable "cpu" {
  description = "CPU granted to the liqoctl peering (liqoctl's default: 4)."
  type        = string
  default     = "4"
}

variable "memory" {
  description = "Memory granted to the liqoctl peering (liqoctl's default: 8Gi)."
  type        = string
  default     = "8Gi"
}

variable "pods" {
  description = "Pods granted to the liqoctl peering (liqoctl's default: 110)."
  type        = string
  default     = "110"
}
