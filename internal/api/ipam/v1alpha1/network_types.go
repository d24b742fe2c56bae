package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// NetworkSpec is the desired state of a Network.
type NetworkSpec struct {
	// CIDR is the network the remote cluster asks for. It cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="CIDR field is immutable"
	CIDR networkingv1beta1.CIDR `json:"cidr"`
	// PreAllocated is how many IPs to reserve at the start of the network. It cannot change.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="PreAllocated field is immutable"
	// +optional
	PreAllocated int32 `json:"preAllocated,omitempty"`
}

// NetworkStatus is the observed state of a Network.
type NetworkStatus struct {
	// CIDR is the local network the remote one is remapped to.
	// +optional
	CIDR networkingv1beta1.CIDR `json:"cidr,omitempty"`
}

// Network is a network of a remote cluster and the local network it is remapped to.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=net,categories=liqo
// +kubebuilder:printcolumn:name="Desired CIDR",type=string,JSONPath=`.spec.cidr`
// +kubebuilder:printcolumn:name="Remapped CIDR",type=string,JSONPath=`.status.cidr`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Network struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NetworkSpec   `json:"spec"`
	Status NetworkStatus `json:"status,omitempty"`
}

// NetworkList is a list of Network.
// +kubebuilder:object:root=true
type NetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Network `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Network{}, &NetworkList{})
}
