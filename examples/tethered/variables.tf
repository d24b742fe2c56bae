variable "home_kubeconfig" {
  description = "Kubeconfig of the home cluster (the sandbox's consumer by default)."
  type        = string
  default     = "../../.sandbox/consumer.kubeconfig"
}

variable "foreign_kubeconfig" {
  description = "Kubeconfig of the foreign cluster (the sandbox's provider by default)."
  type        = string
  default     = "../../.sandbox/provider.kubeconfig"
}

variable "mode" {
  description = "tethered: the home's workloads run on the foreign cluster, which may use all of the home's nodes; autonomous: a plain peering of the home as consumer."
  type        = string
  default     = "tethered"
  validation {
    condition     = contains(["tethered", "autonomous"], var.mode)
    error_message = "mode must be tethered or autonomous."
  }
}

variable "networking" {
  description = "Connect the clusters' pod networks through the gateways (one tunnel serves both directions)."
  type        = bool
  default     = true
}

variable "gateway_service_type" {
  description = "Type of the Service exposing the tunnel's gateway server: LoadBalancer, NodePort or ClusterIP."
  type        = string
  default     = "LoadBalancer"
}

variable "cpu" {
  description = "CPU the home asks of the foreign cluster for its workloads."
  type        = string
  default     = "4"
}

variable "memory" {
  description = "Memory the home asks of the foreign cluster for its workloads."
  type        = string
  default     = "8Gi"
}

variable "pods" {
  description = "How many pods of the home the foreign cluster runs at once, at most."
  type        = string
  default     = "110"
}
