variable "consumer_kubeconfig" {
  description = "Kubeconfig of the consumer cluster."
  type        = string
}

variable "provider_kubeconfig" {
  description = "Kubeconfig of the provider cluster."
  type        = string
}

variable "max_latency" {
  description = "Fail the tunnel test when a gateway measures a round trip above this (e.g. \"50ms\"); null: any."
  type        = string
  default     = null
}
