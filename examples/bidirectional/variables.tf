variable "consumer_kubeconfig" {
  description = "Kubeconfig of the cluster called consumer (the sandbox's by default)."
  type        = string
  default     = "../../.sandbox/consumer.kubeconfig"
}

variable "provider_kubeconfig" {
  description = "Kubeconfig of the cluster called provider (the sandbox's by default)."
  type        = string
  default     = "../../.sandbox/provider.kubeconfig"
}

variable "networking" {
  description = "Connect the clusters' pod networks through the gateways (one tunnel serves both directions)."
  type        = bool
  default     = true
}

variable "gateway_service_type" {
  description = "Type of the Service exposing the tunnel's gateway server: LoadBalancer (a cluster with a load balancer), NodePort (e.g. real nodes without one) or ClusterIP."
  type        = string
  default     = "LoadBalancer"
}

variable "cpu" {
  description = "CPU each cluster asks of the other."
  type        = string
  default     = "1"
}

variable "memory" {
  description = "Memory each cluster asks of the other."
  type        = string
  default     = "2Gi"
}

variable "pods" {
  description = "Pods each virtual node may run."
  type        = string
  default     = "20"
}
