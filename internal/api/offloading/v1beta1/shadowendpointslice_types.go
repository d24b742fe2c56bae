package v1beta1

import (
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EndpointSliceTemplate is the content of an EndpointSlice without its metadata: what the
// provider writes into the EndpointSlice it makes of a ShadowEndpointSlice.
type EndpointSliceTemplate struct {
	// Endpoints are the slice's endpoints, as discovery.k8s.io/v1 EndpointSlice.endpoints.
	// +optional
	Endpoints []discoveryv1.Endpoint `json:"endpoints,omitempty"`
	// Ports are the slice's ports, as discovery.k8s.io/v1 EndpointSlice.ports.
	// +optional
	Ports []discoveryv1.EndpointPort `json:"ports,omitempty"`
	// AddressType is the type of the endpoints' addresses (IPv4, IPv6, FQDN), as
	// discovery.k8s.io/v1 EndpointSlice.addressType.
	// +optional
	AddressType discoveryv1.AddressType `json:"addressType,omitempty"`
}

// ShadowEndpointSliceSpec is the EndpointSlice a consumer cluster asks a provider cluster to keep.
type ShadowEndpointSliceSpec struct {
	// Template is the content of the EndpointSlice.
	// +optional
	Template EndpointSliceTemplate `json:"template,omitempty"`
}

// ShadowEndpointSlice is an EndpointSlice of a consumer cluster, written by the consumer's
// virtual kubelet into one of its remote namespaces on a provider cluster, from which the
// provider makes and owns an EndpointSlice of the same name. A consumer may write
// ShadowEndpointSlices there, never EndpointSlices. It has no status.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=shes;sheps;seps,categories=liqo
type ShadowEndpointSlice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ShadowEndpointSliceSpec `json:"spec,omitempty"`
}

// ShadowEndpointSliceList is a list of ShadowEndpointSlice.
// +kubebuilder:object:root=true
type ShadowEndpointSliceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ShadowEndpointSlice `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ShadowEndpointSlice{}, &ShadowEndpointSliceList{})
}
