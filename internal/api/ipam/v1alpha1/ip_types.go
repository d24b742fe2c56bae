package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// IPSpec is the desired state of an IP: a local address that remote clusters reach through
// the tunnel.
type IPSpec struct {
	// IP is the local address (e.g. a Service's cluster IP). It cannot change.
	// +kubebuilder:validation:Format=ipv4
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="IP field is immutable"
	IP networkingv1beta1.IP `json:"ip"`
}

// IPStatus is the observed state of an IP.
type IPStatus struct {
	// IP is the address remote clusters reach the local one at: one of the cluster's external
	// CIDR, which its gateways translate to spec.ip.
	// +optional
	IP networkingv1beta1.IP `json:"ip,omitempty"`
	// CIDR is the network IP was allocated from (the external CIDR).
	// +optional
	CIDR networkingv1beta1.CIDR `json:"cidr,omitempty"`
}

// IP is a local address and the address in the cluster's external CIDR that remote clusters
// reach it at.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=liqo
// +kubebuilder:printcolumn:name="Local IP",type=string,JSONPath=`.spec.ip`
// +kubebuilder:printcolumn:name="Remapped IP",type=string,JSONPath=`.status.ip`
// +kubebuilder:printcolumn:name="Remapped IP CIDR",type=string,JSONPath=`.status.cidr`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type IP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IPSpec   `json:"spec"`
	Status IPStatus `json:"status,omitempty"`
}

// IPList is a list of IP.
// +kubebuilder:object:root=true
type IPList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IP `json:"items"`
}

func init() {
	SchemeBuilder.Register(&IP{}, &IPList{})
}
