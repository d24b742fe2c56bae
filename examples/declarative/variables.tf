variable "consumer_kubeconfig" {
  description = "Path of the consumer cluster's kubeconfig (with the sandbox: .sandbox/consumer.kubeconfig)."
  type        = string
}

variable "provider_kubeconfig" {
  description = "Path of the provider cluster's kubeconfig (with the sandbox: .sandbox/provider.kubeconfig)."
  type        = string
}

variable "consumer_cluster_id" {
  description = "Cluster ID of the consumer (kubectl get configmap -n liqo liqo-clusterid-configmap)."
  type        = string
  default     = "cl-consumer"
}

variable "provider_cluster_id" {
  description = "Cluster ID of the provider."
  type        = string
  default     = "cl-provider"
}

variable "consumer_pod_cidr" {
  description = "The consumer's pod CIDR."
  type        = string
  default     = "10.200.0.0/16"
}

variable "consumer_external_cidr" {
  description = "The consumer's external CIDR."
  type        = string
  default     = "10.70.0.0/16"
}

variable "provider_pod_cidr" {
  description = "The provider's pod CIDR."
  type        = string
  default     = "10.201.0.0/16"
}

variable "provider_external_cidr" {
  description = "The provider's external CIDR."
  type        = string
  default     = "10.71.0.0/16"
}

variable "gateway_address" {
  description = "Address of a provider node, where the gateway server's node port listens."
  type        = string
  default     = "172.18.0.3"
}

variable "cpu" {
  description = "CPU asked of the provider."
  type        = string
  default     = "4"
}

variable "memory" {
  description = "Memory asked of the provider."
  type        = string
  default     = "8Gi"
}

variable "offloaded_namespace" {
  description = "An existing namespace of the consumer to extend to the provider."
  type        = string
  default     = "demo"
}
