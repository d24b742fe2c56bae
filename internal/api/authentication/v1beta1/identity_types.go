package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
)

// IdentityType is what an identity is used for.
// +kubebuilder:validation:Enum=ControlPlane;ResourceSlice
type IdentityType string

const (
	// ControlPlaneIdentityType is the identity the consumer's control plane uses on the provider.
	ControlPlaneIdentityType IdentityType = "ControlPlane"
	// ResourceSliceIdentityType is the identity a virtual node uses to consume a ResourceSlice.
	ResourceSliceIdentityType IdentityType = "ResourceSlice"
)

// IdentitySpec holds the credentials a consumer cluster received from a provider cluster.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.clusterID) || has(self.clusterID)",message="clusterID cannot be removed once set"
type IdentitySpec struct {
	// ClusterID is the identity of the provider cluster. It cannot change.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterID is immutable"
	ClusterID corev1beta1.ClusterID `json:"clusterID,omitempty"`
	// Type is what the identity is used for.
	// +optional
	Type IdentityType `json:"type,omitempty"`
	// AuthParams are the credentials to access the provider cluster.
	// +optional
	AuthParams AuthParams `json:"authParams,omitempty"`
	// Namespace is the namespace of the provider cluster in which the identity is used.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// IdentityStatus is the observed state of an identity.
type IdentityStatus struct {
	// KubeconfigSecretRef references the secret holding the kubeconfig built from the identity.
	// +optional
	KubeconfigSecretRef *corev1.LocalObjectReference `json:"kubeconfigSecretRef,omitempty"`
}

// Identity holds the credentials with which a consumer cluster accesses a provider cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=id,categories=liqo
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="KubeconfigSecret",type=string,JSONPath=`.status.kubeconfigSecretRef.name`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Identity struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IdentitySpec   `json:"spec,omitempty"`
	Status IdentityStatus `json:"status,omitempty"`
}

// IdentityList is a list of Identity.
// +kubebuilder:object:root=true
type IdentityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Identity `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Identity{}, &IdentityList{})
}
