package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NamespaceMappingStrategyType is how the name of a remote namespace is chosen.
// +kubebuilder:validation:Enum=EnforceSameName;DefaultName;SelectedName
type NamespaceMappingStrategyType string

const (
	// EnforceSameNameMappingStrategyType gives the remote namespace the local one's name, at
	// the risk of conflicts in the provider cluster.
	EnforceSameNameMappingStrategyType NamespaceMappingStrategyType = "EnforceSameName"
	// DefaultNameMappingStrategyType gives the remote namespace a name derived from the local
	// one's and the consumer cluster's, which avoids conflicts.
	DefaultNameMappingStrategyType NamespaceMappingStrategyType = "DefaultName"
	// SelectedNameMappingStrategyType gives the remote namespace the name in spec.remoteNamespaceName.
	SelectedNameMappingStrategyType NamespaceMappingStrategyType = "SelectedName"
)

// PodOffloadingStrategyType is where the pods of an offloaded namespace may run.
// +kubebuilder:validation:Enum=Local;Remote;LocalAndRemote
type PodOffloadingStrategyType string

const (
	// LocalPodOffloadingStrategyType keeps all pods in the local cluster.
	LocalPodOffloadingStrategyType PodOffloadingStrategyType = "Local"
	// RemotePodOffloadingStrategyType runs all pods in remote clusters.
	RemotePodOffloadingStrategyType PodOffloadingStrategyType = "Remote"
	// LocalAndRemotePodOffloadingStrategyType runs pods in either, within the cluster selector.
	LocalAndRemotePodOffloadingStrategyType PodOffloadingStrategyType = "LocalAndRemote"
)

// OffloadingPhaseType is the overall state of the offloading of a namespace.
type OffloadingPhaseType string

const (
	// ReadyOffloadingPhaseType means the remote namespaces exist in all selected clusters.
	ReadyOffloadingPhaseType OffloadingPhaseType = "Ready"
	// NoClusterSelectedOffloadingPhaseType means no cluster matches the cluster selector.
	NoClusterSelectedOffloadingPhaseType OffloadingPhaseType = "NoClusterSelected"
	// InProgressOffloadingPhaseType means the remote namespaces are still being created.
	InProgressOffloadingPhaseType OffloadingPhaseType = "InProgress"
	// SomeFailedOffloadingPhaseType means the creation of some remote namespaces failed.
	SomeFailedOffloadingPhaseType OffloadingPhaseType = "SomeFailed"
	// AllFailedOffloadingPhaseType means the creation of every remote namespace failed.
	AllFailedOffloadingPhaseType OffloadingPhaseType = "AllFailed"
	// TerminatingOffloadingPhaseType means the remote namespaces are being deleted.
	TerminatingOffloadingPhaseType OffloadingPhaseType = "Terminating"
)

// RemoteNamespaceConditionType names one aspect of a remote namespace.
type RemoteNamespaceConditionType string

const (
	// NamespaceReady is whether the remote namespace exists and is usable.
	NamespaceReady RemoteNamespaceConditionType = "Ready"
	// NamespaceOffloadingRequired is whether the namespace is to be offloaded to the cluster.
	NamespaceOffloadingRequired RemoteNamespaceConditionType = "OffloadingRequired"
)

// RemoteNamespaceCondition is the state of one aspect of a remote namespace.
type RemoteNamespaceCondition struct {
	// Type of the condition.
	Type RemoteNamespaceConditionType `json:"type"`
	// Status of the condition: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
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

// RemoteNamespaceConditions are the conditions of the remote namespace in one cluster.
type RemoteNamespaceConditions []RemoteNamespaceCondition

// NamespaceOffloadingSpec is how a namespace is offloaded to remote clusters.
// +kubebuilder:validation:XValidation:rule="(has(self.namespaceMappingStrategy) && self.namespaceMappingStrategy == 'SelectedName') == (has(self.remoteNamespaceName) && size(self.remoteNamespaceName) > 0)",message="remoteNamespaceName must be set if and only if namespaceMappingStrategy is SelectedName"
type NamespaceOffloadingSpec struct {
	// NamespaceMappingStrategy is how the name of the remote namespaces is chosen.
	// +kubebuilder:default=DefaultName
	// +optional
	NamespaceMappingStrategy NamespaceMappingStrategyType `json:"namespaceMappingStrategy,omitempty"`
	// PodOffloadingStrategy is where the namespace's pods may run.
	// +kubebuilder:default=LocalAndRemote
	// +optional
	PodOffloadingStrategy PodOffloadingStrategyType `json:"podOffloadingStrategy,omitempty"`
	// ClusterSelector selects the remote clusters, through the labels of their virtual
	// nodes, to which the namespace is offloaded. No selector, or one with no terms,
	// selects all clusters.
	// +optional
	ClusterSelector *corev1.NodeSelector `json:"clusterSelector,omitempty"`
	// RemoteNamespaceName is the name of the remote namespaces. It must be set if and only
	// if NamespaceMappingStrategy is SelectedName.
	// +optional
	RemoteNamespaceName string `json:"remoteNamespaceName,omitempty"`
}

// NamespaceOffloadingStatus is the observed state of the offloading of a namespace.
type NamespaceOffloadingStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// OffloadingPhase is the overall state of the offloading.
	// +optional
	OffloadingPhase OffloadingPhaseType `json:"offloadingPhase,omitempty"`
	// RemoteNamespaceName is the name of the remote namespaces, as chosen by the mapping strategy.
	// +optional
	RemoteNamespaceName string `json:"remoteNamespaceName,omitempty"`
	// RemoteNamespacesConditions are the conditions of the remote namespace in each remote
	// cluster, keyed by cluster ID.
	// +optional
	RemoteNamespacesConditions map[string]RemoteNamespaceConditions `json:"remoteNamespacesConditions,omitempty"`
}

// NamespaceOffloading enables the offloading of the namespace it lives in to remote clusters.
// There is at most one per namespace, and it must be named offloading.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=nso;nsof;nsoff;nsoffloading,categories=liqo
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'offloading'",message="the NamespaceOffloading of a namespace must be named offloading"
// +kubebuilder:printcolumn:name="NamespaceMappingStrategy",type=string,JSONPath=`.spec.namespaceMappingStrategy`
// +kubebuilder:printcolumn:name="PodOffloadingStrategy",type=string,JSONPath=`.spec.podOffloadingStrategy`
// +kubebuilder:printcolumn:name="OffloadingPhase",type=string,JSONPath=`.status.offloadingPhase`
// +kubebuilder:printcolumn:name="RemoteNamespaceName",type=string,JSONPath=`.status.remoteNamespaceName`,priority=10
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespaceOffloading struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NamespaceOffloadingSpec   `json:"spec"`
	Status NamespaceOffloadingStatus `json:"status,omitempty"`
}

// NamespaceOffloadingList is a list of NamespaceOffloading.
// +kubebuilder:object:root=true
type NamespaceOffloadingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespaceOffloading `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NamespaceOffloading{}, &NamespaceOffloadingList{})
}
