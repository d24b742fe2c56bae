package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ForeignClusterSpec names the remote cluster.
type ForeignClusterSpec struct {
	// ClusterID is the identity of the remote cluster. It cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterID is immutable"
	ClusterID ClusterID `json:"clusterID"`
}

// Module is the state of one peering module (networking, authentication, offloading).
type Module struct {
	// Enabled tells whether the module is in use for this peering.
	Enabled bool `json:"enabled"`
	// Conditions are the states of the module's parts.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []Condition `json:"conditions,omitempty"`
}

// Modules holds the state of each peering module.
type Modules struct {
	// Networking is the state of the inter-cluster network.
	Networking Module `json:"networking"`
	// Authentication is the state of the identity exchange.
	Authentication Module `json:"authentication"`
	// Offloading is the state of the virtual nodes and offloaded namespaces.
	Offloading Module `json:"offloading"`
}

// TenantNamespace names the tenant namespaces of the peering on both sides.
type TenantNamespace struct {
	// Local is the tenant namespace in this cluster.
	// +optional
	Local string `json:"local,omitempty"`
	// Remote is the tenant namespace in the remote cluster.
	// +optional
	Remote string `json:"remote,omitempty"`
}

// ForeignClusterStatus is the observed state of the peering with a remote cluster.
type ForeignClusterStatus struct {
	// Role of the remote cluster as seen from this one.
	// +kubebuilder:default=Unknown
	Role RoleType `json:"role"`
	// Modules holds the per-module state.
	// +optional
	Modules Modules `json:"modules,omitempty"`
	// Conditions are the peering-wide conditions.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []Condition `json:"conditions,omitempty"`
	// TenantNamespace names the tenant namespaces of this peering.
	// +optional
	TenantNamespace TenantNamespace `json:"tenantNamespace,omitempty"`
	// APIServerURL is the URL of the remote cluster's API server.
	// +optional
	APIServerURL string `json:"apiServerUrl,omitempty"`
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ForeignCluster is the local view of a peered remote cluster and the state of the peering.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=fc,categories=liqo
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.status.role`
// +kubebuilder:printcolumn:name="ClusterID",type=string,JSONPath=`.spec.clusterID`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ForeignCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ForeignClusterSpec   `json:"spec,omitempty"`
	Status ForeignClusterStatus `json:"status,omitempty"`
}

// ForeignClusterList is a list of ForeignCluster.
// +kubebuilder:object:root=true
type ForeignClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ForeignCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ForeignCluster{}, &ForeignClusterList{})
}
