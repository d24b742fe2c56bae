package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PublicKeySpec is the desired state of a PublicKey.
type PublicKeySpec struct {
	// PublicKey is the public key (for WireGuard, the 32 raw key bytes; base64 on the wire).
	// +optional
	PublicKey []byte `json:"publicKey,omitempty"`
}

// PublicKey holds a public key of the remote cluster's gateway, needed by some tunnel
// technologies (WireGuard).
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,path=publickeies,shortName=pk;pkies;pkey,categories=liqo
type PublicKey struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PublicKeySpec `json:"spec,omitempty"`
}

// PublicKeyList is a list of PublicKey.
// +kubebuilder:object:root=true
type PublicKeyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PublicKey `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PublicKey{}, &PublicKeyList{})
}
