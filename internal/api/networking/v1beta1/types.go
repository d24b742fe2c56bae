package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
)

// CIDR is a network in CIDR notation, such as "10.0.0.0/16".
// +kubebuilder:validation:Format=cidr
type CIDR string

// String returns the CIDR as a plain string.
func (c CIDR) String() string {
	return string(c)
}

// IP is an IPv4 address, such as "10.0.0.1".
// +kubebuilder:validation:Format=ipv4
type IP string

// String returns the IP as a plain string.
func (ip IP) String() string {
	return string(ip)
}

// EndpointStatus is where a gateway server can be reached from the remote cluster: the
// GatewayServer publishes it in its status and the remote GatewayClient points to it in its spec.
// Exactly one of Port and Ports is set.
// +kubebuilder:validation:XValidation:rule="!(has(self.port) && has(self.ports))",message="port and ports are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="has(self.port) || (has(self.ports) && size(self.ports) > 0)",message="at least one of port or ports must be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.ports)) || self.ports.all(p, self.ports.filter(q, q == p).size() == 1)",message="ports must not contain duplicates"
type EndpointStatus struct {
	// Addresses are the IP addresses or host names of the endpoint.
	// +optional
	Addresses []string `json:"addresses,omitempty"`
	// Port is the single port of the endpoint. Liqo deprecates it in favour of Ports but still
	// accepts it; it cannot be set together with Ports.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// Ports are the ports of the endpoint, without duplicates.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=65535
	// +optional
	Ports []int32 `json:"ports,omitempty"`
	// Protocol is the transport protocol of the endpoint.
	// +kubebuilder:validation:Enum=TCP;UDP
	// +optional
	Protocol *corev1.Protocol `json:"protocol,omitempty"`
}

// InternalGatewayEndpoint is where a gateway can be reached from inside its own cluster.
type InternalGatewayEndpoint struct {
	// IP is the IP address of the gateway on the internal network.
	// +optional
	IP *IP `json:"ip,omitempty"`
	// Node is the name of the node the gateway runs on.
	// +optional
	Node *string `json:"node,omitempty"`
}
