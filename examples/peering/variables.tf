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
  description = "Connect the clusters' pod networks through the gateways; false where the gateways do not run (a sandbox started without root)."
  type        = bool
  default     = true
}

variable "in_band" {
  description = "Have the consumer reach the provider's API server through the tunnel (liqoctl peer --in-band): for a provider whose API server the consumer's cluster cannot reach. Needs networking."
  type        = bool
  default     = false
}

variable "gateway_service_type" {
  description = "Type of the Service exposing the provider's gateway server: LoadBalancer, NodePort or ClusterIP."
  type        = string
  default     = "LoadBalancer"
}

variable "cpu" {
  description = "CPU asked of the provider."
  type        = string
  default     = "2"
}

variable "memory" {
  description = "Memory asked of the provider."
  type        = string
  default     = "4Gi"
}

variable "pods" {
  description = "Pods the virtual node may run."
  type        = string
  default     = "50"
}
