package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
)

// ResourceSliceClass is the class of a ResourceSlice, which selects how the provider serves it.
type ResourceSliceClass string

const (
	// ResourceSliceClassUnknown is the class of a ResourceSlice that names none.
	ResourceSliceClassUnknown ResourceSliceClass = ""
	// ResourceSliceClassDefault is the default class of a ResourceSlice.
	ResourceSliceClassDefault ResourceSliceClass = "default"
)

// ResourceSliceConditionType names one aspect of the processing of a ResourceSlice.
// +kubebuilder:validation:Enum=Authentication;Resources
type ResourceSliceConditionType string

const (
	// ResourceSliceConditionTypeAuthentication is whether the provider issued credentials for the slice.
	ResourceSliceConditionTypeAuthentication ResourceSliceConditionType = "Authentication"
	// ResourceSliceConditionTypeResources is whether the provider granted the requested resources.
	ResourceSliceConditionTypeResources ResourceSliceConditionType = "Resources"
)

// ResourceSliceConditionStatus is the outcome of one aspect of the processing of a ResourceSlice.
// +kubebuilder:validation:Enum=Accepted;Denied
type ResourceSliceConditionStatus string

const (
	// ResourceSliceConditionAccepted means the provider accepted the request.
	ResourceSliceConditionAccepted ResourceSliceConditionStatus = "Accepted"
	// ResourceSliceConditionDenied means the provider denied the request.
	ResourceSliceConditionDenied ResourceSliceConditionStatus = "Denied"
)

// ResourceSliceCondition is the state of one aspect of the processing of a ResourceSlice.
type ResourceSliceCondition struct {
	// Type of the condition.
	Type ResourceSliceConditionType `json:"type"`
	// Status of the condition.
	Status ResourceSliceConditionStatus `json:"status"`
	// LastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a machine-readable word for the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is a human-readable explanation of the last transition.
	// +optional
	Message string `json:"message,omitempty"`
}

// ResourceSliceSpec is a request of a consumer cluster for resources of a provider cluster.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.consumerClusterID) || has(self.consumerClusterID)",message="consumerClusterID cannot be removed once set"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.providerClusterID) || has(self.providerClusterID)",message="providerClusterID cannot be removed once set"
type ResourceSliceSpec struct {
	// ConsumerClusterID is the identity of the consumer cluster. It cannot change: a
	// ResourceSlice cannot move to another consumer cluster.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="consumerClusterID is immutable"
	// +optional
	ConsumerClusterID *corev1beta1.ClusterID `json:"consumerClusterID,omitempty"`
	// ProviderClusterID is the identity of the provider cluster. It cannot change: a
	// ResourceSlice cannot move to another provider cluster.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="providerClusterID is immutable"
	// +optional
	ProviderClusterID *corev1beta1.ClusterID `json:"providerClusterID,omitempty"`
	// Resources are the quantities of resources requested.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Class is the class of the ResourceSlice.
	// +optional
	Class ResourceSliceClass `json:"class,omitempty"`
	// CSR is the certificate signing request for the identity that consumes the slice.
	// +optional
	CSR []byte `json:"csr,omitempty"`
}

// ResourceSliceStatus is the provider cluster's answer to a ResourceSlice.
type ResourceSliceStatus struct {
	// AuthParams are the credentials to consume the slice's resources on the provider.
	// +optional
	AuthParams *AuthParams `json:"authParams,omitempty"`
	// Resources are the quantities of resources granted.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// NodeLabels are labels of the provider cluster, to be set on the virtual node.
	// +optional
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
	// NodeSelector is the node selector applied to the pods offloaded through this slice.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// StorageClasses are the storage classes the provider offers.
	// +optional
	StorageClasses []StorageType `json:"storageClasses,omitempty"`
	// IngressClasses are the ingress classes the provider offers.
	// +optional
	IngressClasses []IngressType `json:"ingressClasses,omitempty"`
	// LoadBalancerClasses are the load balancer classes the provider offers.
	// +optional
	LoadBalancerClasses []LoadBalancerType `json:"loadBalancerClasses,omitempty"`
	// Conditions are the states of the processing of the slice.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []ResourceSliceCondition `json:"conditions,omitempty"`
}

// ResourceSlice is a share of a provider cluster's resources requested by a consumer cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=rslice,categories=liqo
// +kubebuilder:printcolumn:name="Authentication",type=string,JSONPath=`.status.conditions[?(@.type=="Authentication")].status`
// +kubebuilder:printcolumn:name="Resources",type=string,JSONPath=`.status.conditions[?(@.type=="Resources")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceSlice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceSliceSpec   `json:"spec,omitempty"`
	Status ResourceSliceStatus `json:"status,omitempty"`
}

// ResourceSliceList is a list of ResourceSlice.
// +kubebuilder:object:root=true
type ResourceSliceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceSlice `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ResourceSlice{}, &ResourceSliceList{})
}
