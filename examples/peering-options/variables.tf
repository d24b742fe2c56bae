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

variable "nat_address" {
  description = "Address at which the provider's gateway client reaches the consumer's server, when a NAT stands between them (null: the one the server's Service reports)."
  type        = string
  default     = null
}

variable "nat_port" {
  description = "UDP port the NAT forwards to the consumer's gateway server (null: the one the server's Service reports)."
  type        = number
  default     = null
}

variable "create_resource_slice" {
  description = "Ask the provider for resources (a ResourceSlice); false peers without offloading."
  type        = bool
  default     = true
}

variable "create_virtual_node" {
  description = "Have a virtual node stand for the granted slice."
  type        = bool
  default     = true
}
