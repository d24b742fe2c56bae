package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
)

// VirtualNodeConditionType names one part of a virtual node.
// +kubebuilder:validation:Enum=VirtualKubelet;Node
type VirtualNodeConditionType string

const (
	// VirtualKubeletConditionType is the state of the virtual kubelet serving the node.
	VirtualKubeletConditionType VirtualNodeConditionType = "VirtualKubelet"
	// NodeConditionType is the state of the Node object.
	NodeConditionType VirtualNodeConditionType = "Node"
)

// VirtualNodeConditionStatusType is the state of one part of a virtual node.
// +kubebuilder:validation:Enum=None;Running;Creating;Draining;Deleting
type VirtualNodeConditionStatusType string

const (
	// NoneConditionStatusType means the part does not exist (yet).
	NoneConditionStatusType VirtualNodeConditionStatusType = "None"
	// RunningConditionStatusType means the part is up.
	RunningConditionStatusType VirtualNodeConditionStatusType = "Running"
	// CreatingConditionStatusType means the part is being created.
	CreatingConditionStatusType VirtualNodeConditionStatusType = "Creating"
	// DrainingConditionStatusType means the part's workloads are being evicted.
	DrainingConditionStatusType VirtualNodeConditionStatusType = "Draining"
	// DeletingConditionStatusType means the part is being deleted.
	DeletingConditionStatusType VirtualNodeConditionStatusType = "Deleting"
)

// VirtualNodeCondition is the state of one part of a virtual node.
type VirtualNodeCondition struct {
	// Type of the condition.
	Type VirtualNodeConditionType `json:"type"`
	// Status of the condition.
	// +kubebuilder:default=None
	Status VirtualNodeConditionStatusType `json:"status"`
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

// Affinity constrains where the pods offloaded through a virtual node run among the provider's
// nodes.
type Affinity struct {
	// NodeAffinity is the node affinity the offloaded pods get on the provider.
	// +optional
	NodeAffinity *corev1.NodeAffinity `json:"nodeAffinity,omitempty"`
}

// OffloadingPatch is what the virtual kubelet changes on the pods (and other objects) it
// offloads through a virtual node, e.g. to target a group of the provider's nodes.
type OffloadingPatch struct {
	// AnnotationsNotReflected are the keys of the annotations that are not copied to the
	// provider.
	// +optional
	AnnotationsNotReflected []string `json:"annotationsNotReflected,omitempty"`
	// LabelsNotReflected are the keys of the labels that are not copied to the provider.
	// +optional
	LabelsNotReflected []string `json:"labelsNotReflected,omitempty"`
	// NodeSelector is added to the node selector of the offloaded pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations are added to the tolerations of the offloaded pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity is added to the affinity of the offloaded pods.
	// +optional
	Affinity *Affinity `json:"affinity,omitempty"`
	// RuntimeClassName is the runtime class of the offloaded pods that name none of their own.
	// +optional
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`
}

// DeploymentTemplate describes the Deployment that runs a virtual node's virtual kubelet.
type DeploymentTemplate struct {
	// ObjectMeta holds the Deployment's labels and annotations.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the Deployment's spec.
	// +optional
	Spec appsv1.DeploymentSpec `json:"spec,omitempty"`
}

// VirtualNodeSpec describes a node of the consumer cluster that stands for (a share of) a
// provider cluster. The virtual kubelet runs in-process or as a Deployment of ours: template,
// images and vkOptionsTemplateRef are accepted and kept, for upstream's tools, but not acted on.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.clusterID) || has(self.clusterID)",message="clusterID cannot be removed once set"
type VirtualNodeSpec struct {
	// ClusterID is the identity of the provider cluster the node stands for. It cannot change.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterID is immutable"
	ClusterID corev1beta1.ClusterID `json:"clusterID,omitempty"`
	// Template is upstream's Deployment of the node's virtual kubelet; kept, not used.
	// +optional
	Template *DeploymentTemplate `json:"template,omitempty"`
	// OffloadingPatch changes what is offloaded through the node (see OffloadingPatch).
	// +optional
	OffloadingPatch *OffloadingPatch `json:"offloadingPatch,omitempty"`
	// CreateNode tells whether a Node object is created, so that pods can be scheduled on it.
	// +optional
	CreateNode *bool `json:"createNode,omitempty"`
	// DisableNetworkCheck turns off the check of the inter-cluster network; the network
	// status is then not reported among the node's conditions.
	// +optional
	DisableNetworkCheck *bool `json:"disableNetworkCheck,omitempty"`
	// KubeconfigSecretRef references the secret holding the kubeconfig to access the
	// provider cluster.
	// +optional
	KubeconfigSecretRef *corev1.LocalObjectReference `json:"kubeconfigSecretRef,omitempty"`
	// Images are the images the node reports as present; kept, not used.
	// +optional
	Images []corev1.ContainerImage `json:"images,omitempty"`
	// Labels are added to the Node.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added to the Node.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Taints are added to the Node.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// ResourceQuota is the amount of resources the node offers.
	// +optional
	ResourceQuota corev1.ResourceQuotaSpec `json:"resourceQuota,omitempty"`
	// StorageClasses are the storage classes the provider offers through the node.
	// +optional
	StorageClasses []authv1beta1.StorageType `json:"storageClasses,omitempty"`
	// IngressClasses are the ingress classes the provider offers through the node.
	// +optional
	IngressClasses []authv1beta1.IngressType `json:"ingressClasses,omitempty"`
	// LoadBalancerClasses are the load balancer classes the provider offers through the node.
	// +optional
	LoadBalancerClasses []authv1beta1.LoadBalancerType `json:"loadBalancerClasses,omitempty"`
	// VkOptionsTemplateRef references upstream's VkOptionsTemplate, the options of the node's
	// virtual kubelet; kept, not used.
	// +optional
	VkOptionsTemplateRef *corev1.ObjectReference `json:"vkOptionsTemplateRef,omitempty"`
}

// VirtualNodeStatus is the observed state of a virtual node.
type VirtualNodeStatus struct {
	// Conditions are the states of the node's parts.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []VirtualNodeCondition `json:"conditions,omitempty"`
}

// VirtualNode is a node of the consumer cluster backed by the resources of a provider cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=vn;vnode;virno;vno,categories=liqo
// +kubebuilder:printcolumn:name="ClusterID",type=string,JSONPath=`.spec.clusterID`
// +kubebuilder:printcolumn:name="Create Node",type=boolean,JSONPath=`.spec.createNode`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.conditions[?(@.type=="Node")].status`,priority=1
// +kubebuilder:printcolumn:name="VirtualKubelet",type=string,JSONPath=`.status.conditions[?(@.type=="VirtualKubelet")].status`,priority=1
type VirtualNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VirtualNodeSpec   `json:"spec,omitempty"`
	Status VirtualNodeStatus `json:"status,omitempty"`
}

// VirtualNodeList is a list of VirtualNode.
// +kubebuilder:object:root=true
type VirtualNodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualNode `json:"items"`
}

func init() {
	SchemeBuilder.Register(&VirtualNode{}, &VirtualNodeList{})
}
