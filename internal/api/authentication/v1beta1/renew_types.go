package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
)

// RenewSpec is a consumer cluster's request for a fresh client certificate on a provider: for
// its control-plane identity or for the identity of one of its ResourceSlices.
type RenewSpec struct {
	// ConsumerClusterID is the identity of the consumer cluster asking for the certificate.
	// +optional
	ConsumerClusterID corev1beta1.ClusterID `json:"consumerClusterID,omitempty"`
	// PublicKey is the consumer's public key, the one its Tenant holds.
	// +optional
	PublicKey []byte `json:"publicKey,omitempty"`
	// CSR is the PEM certificate signing request to be signed by the provider.
	// +optional
	CSR []byte `json:"csr,omitempty"`
	// IdentityType tells which identity the certificate is for: ControlPlane or ResourceSlice.
	// +optional
	IdentityType IdentityType `json:"identityType,omitempty"`
	// ResourceSliceRef names the ResourceSlice (in the same namespace) whose identity is renewed,
	// for IdentityType ResourceSlice.
	// +optional
	ResourceSliceRef *corev1.LocalObjectReference `json:"resourceSliceRef,omitempty"`
}

// RenewStatus is the provider's answer to a Renew.
type RenewStatus struct {
	// AuthParams hold the signed certificate and how to reach the provider's API server with it.
	// +optional
	AuthParams *AuthParams `json:"authParams,omitempty"`
}

// Renew asks the provider cluster to sign a new client certificate for one of the consumer's
// identities; the provider answers in its status.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=liqo
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Renew struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RenewSpec   `json:"spec,omitempty"`
	Status RenewStatus `json:"status,omitempty"`
}

// RenewList is a list of Renew.
// +kubebuilder:object:root=true
type RenewList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Renew `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Renew{}, &RenewList{})
}
