package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ShadowPodSpec is the pod a consumer cluster runs in a provider cluster.
type ShadowPodSpec struct {
	// Pod is the specification of the pod to run.
	// +optional
	Pod corev1.PodSpec `json:"pod,omitempty"`
}

// ShadowPodStatus is the observed state of a shadow pod.
type ShadowPodStatus struct {
	// Phase is the phase of the pod created from the shadow pod.
	// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Unknown
	// +kubebuilder:default=Unknown
	Phase corev1.PodPhase `json:"phase"`
}

// ShadowPod is a pod of a consumer cluster, created in a provider cluster, from which the
// provider creates and owns the actual Pod.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=shp;shpod,categories=liqo
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ShadowPod struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ShadowPodSpec   `json:"spec,omitempty"`
	Status ShadowPodStatus `json:"status,omitempty"`
}

// ShadowPodList is a list of ShadowPod.
// +kubebuilder:object:root=true
type ShadowPodList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ShadowPod `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ShadowPod{}, &ShadowPodList{})
}
