package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GatewayClientSpec is the desired state of a GatewayClient.
type GatewayClientSpec struct {
	// MTU is the MTU of the tunnel.
	// +optional
	MTU int `json:"mtu,omitempty"`
	// Endpoint is the remote gateway server to connect to.
	// +optional
	Endpoint EndpointStatus `json:"endpoint,omitempty"`
	// SecretRef names the Secret holding the gateway's keys. Leave it empty to let the operator
	// create one.
	// +optional
	SecretRef corev1.LocalObjectReference `json:"secretRef,omitempty"`
	// ClientTemplateRef points to the template the gateway client's workload is made from.
	// +optional
	ClientTemplateRef corev1.ObjectReference `json:"clientTemplateRef,omitempty"`
}

// GatewayClientStatus is the observed state of a GatewayClient.
type GatewayClientStatus struct {
	// ClientRef points to the resource made from the client template.
	// +optional
	ClientRef *corev1.ObjectReference `json:"clientRef,omitempty"`
	// InternalEndpoint is where the gateway client can be reached inside this cluster.
	// +optional
	InternalEndpoint *InternalGatewayEndpoint `json:"internalEndpoint,omitempty"`
	// SecretRef points to the Secret holding the gateway's keys.
	// +optional
	SecretRef *corev1.ObjectReference `json:"secretRef,omitempty"`
}

// GatewayClient is a tunnel gateway that connects to the remote cluster's gateway server.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=gwc;gwclient,categories=liqo
// +kubebuilder:printcolumn:name="Template Kind",type=string,JSONPath=`.spec.clientTemplateRef.kind`,priority=1
// +kubebuilder:printcolumn:name="Template Name",type=string,JSONPath=`.spec.clientTemplateRef.name`
// +kubebuilder:printcolumn:name="Template Namespace",type=string,JSONPath=`.spec.clientTemplateRef.namespace`,priority=1
// +kubebuilder:printcolumn:name="IP",type=string,JSONPath=`.spec.endpoint.addresses[*]`
// +kubebuilder:printcolumn:name="Port",type=string,JSONPath=`.spec.endpoint.port`
// +kubebuilder:printcolumn:name="Protocol",type=string,JSONPath=`.spec.endpoint.protocol`,priority=1
// +kubebuilder:printcolumn:name="MTU",type=integer,JSONPath=`.spec.mtu`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GatewayClient struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GatewayClientSpec   `json:"spec,omitempty"`
	Status GatewayClientStatus `json:"status,omitempty"`
}

// GatewayClientList is a list of GatewayClient.
// +kubebuilder:object:root=true
type GatewayClientList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GatewayClient `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GatewayClient{}, &GatewayClientList{})
}
