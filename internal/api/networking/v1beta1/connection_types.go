package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConnectionType is the side of the tunnel a Connection describes.
// +kubebuilder:validation:Enum=Server;Client
type ConnectionType string

const (
	// ConnectionTypeServer means the local gateway is the tunnel's server.
	ConnectionTypeServer ConnectionType = "Server"
	// ConnectionTypeClient means the local gateway is the tunnel's client.
	ConnectionTypeClient ConnectionType = "Client"
)

// ConnectionStatusValue is the state of a tunnel connection. The CRD does not restrict it to
// the constants below (neither does Liqo's).
type ConnectionStatusValue string

const (
	// Connecting means the tunnel is being set up.
	Connecting ConnectionStatusValue = "Connecting"
	// Connected means the tunnel is up.
	Connected ConnectionStatusValue = "Connected"
	// ConnectionError means the tunnel failed.
	ConnectionError ConnectionStatusValue = "Error"
)

// ConnectionSpec is the desired state of a Connection.
type ConnectionSpec struct {
	// Type tells whether the local gateway is the tunnel's server or client. It cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable"
	Type ConnectionType `json:"type"`
	// GatewayRef points to the local GatewayServer or GatewayClient of the tunnel.
	GatewayRef corev1.ObjectReference `json:"gatewayRef"`
}

// ConnectionLatency is the last measured round-trip latency of the tunnel.
type ConnectionLatency struct {
	// Value is the latency, as a duration string (e.g. "1.2ms").
	// +optional
	Value string `json:"value,omitempty"`
	// Timestamp is when the latency was measured.
	// +optional
	Timestamp metav1.Time `json:"timestamp,omitempty"`
}

// ConnectionStatus is the observed state of a Connection.
type ConnectionStatus struct {
	// Value is the state of the tunnel.
	// +optional
	Value ConnectionStatusValue `json:"value,omitempty"`
	// Latency is the last measured latency of the tunnel.
	// +optional
	Latency ConnectionLatency `json:"latency,omitempty"`
}

// Connection is the state of the tunnel between the local gateway and the remote one.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=conn,categories=liqo
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.value`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Latency",type=string,JSONPath=`.status.latency.value`,priority=1
type Connection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ConnectionSpec   `json:"spec,omitempty"`
	Status ConnectionStatus `json:"status,omitempty"`
}

// ConnectionList is a list of Connection.
// +kubebuilder:object:root=true
type ConnectionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Connection `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Connection{}, &ConnectionList{})
}
