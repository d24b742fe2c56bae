package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MappingPhase is the state of a remote namespace.
// +kubebuilder:validation:Enum=Accepted;CreationLoopBackOff;Terminating
type MappingPhase string

const (
	// MappingAccepted means the remote namespace exists.
	MappingAccepted MappingPhase = "Accepted"
	// MappingCreationLoopBackOff means the creation of the remote namespace keeps failing.
	MappingCreationLoopBackOff MappingPhase = "CreationLoopBackOff"
	// MappingTerminating means the remote namespace is being deleted.
	MappingTerminating MappingPhase = "Terminating"
)

// RemoteNamespaceStatus is the state of one remote namespace.
type RemoteNamespaceStatus struct {
	// RemoteNamespace is the name of the remote namespace.
	// +optional
	RemoteNamespace string `json:"remoteNamespace,omitempty"`
	// Phase is the state of the remote namespace.
	// +optional
	Phase MappingPhase `json:"phase,omitempty"`
}

// NamespaceMapSpec is the set of namespaces to create in one remote cluster.
type NamespaceMapSpec struct {
	// DesiredMapping maps the name of each local namespace to offload to the name of its
	// remote namespace.
	// +optional
	DesiredMapping map[string]string `json:"desiredMapping,omitempty"`
}

// NamespaceMapStatus is the observed state of the namespaces in one remote cluster.
type NamespaceMapStatus struct {
	// CurrentMapping maps the name of each offloaded local namespace to the state of its
	// remote namespace.
	// +optional
	CurrentMapping map[string]RemoteNamespaceStatus `json:"currentMapping,omitempty"`
}

// NamespaceMap maps local namespaces to the remote namespaces in one remote cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=nm;nsmap,categories=liqo
// +kubebuilder:printcolumn:name="Local",type=string,JSONPath=`.metadata.labels.liqo\.io/replication`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespaceMap struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NamespaceMapSpec   `json:"spec,omitempty"`
	Status NamespaceMapStatus `json:"status,omitempty"`
}

// NamespaceMapList is a list of NamespaceMap.
// +kubebuilder:object:root=true
type NamespaceMapList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespaceMap `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NamespaceMap{}, &NamespaceMapList{})
}
