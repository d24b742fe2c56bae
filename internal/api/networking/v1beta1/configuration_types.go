package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterConfigCIDR lists the networks of a cluster.
type ClusterConfigCIDR struct {
	// Pod are the networks of the cluster's pods.
	// +optional
	Pod []CIDR `json:"pod,omitempty"`
	// External are the networks through which the cluster reaches addresses outside itself.
	// +optional
	External []CIDR `json:"external,omitempty"`
}

// ClusterConfig is the network configuration of one cluster.
type ClusterConfig struct {
	// CIDR lists the networks of the cluster.
	// +optional
	CIDR ClusterConfigCIDR `json:"cidr,omitempty"`
}

// ConfigurationSpec is the desired network configuration of a pair of clusters.
type ConfigurationSpec struct {
	// Local is the network configuration of the cluster the resource lives in.
	// +optional
	Local *ClusterConfig `json:"local,omitempty"`
	// Remote is the network configuration of the other cluster, as it declares it.
	// +optional
	Remote ClusterConfig `json:"remote,omitempty"`
}

// ConfigurationConditionNetworkCIDRsConfigured is the Configuration condition (upstream Liqo's
// name) that is True once status.remote holds the remapped CIDRs of the current generation;
// upstream liqoctl waits for it.
const ConfigurationConditionNetworkCIDRsConfigured = "NetworkCIDRsConfigured"

// ConfigurationStatus is the observed state of a Configuration.
type ConfigurationStatus struct {
	// Remote is the network configuration of the other cluster after remapping: how the local
	// cluster sees the remote one.
	// +optional
	Remote *ClusterConfig `json:"remote,omitempty"`
	// Conditions are the current conditions of the configuration.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Configuration is the network configuration of a pair of clusters: the local and remote pod
// and external networks and how the remote ones are remapped locally.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=conf,categories=liqo
// +kubebuilder:printcolumn:name="Desired Pod CIDR",type=string,JSONPath=`.spec.remote.cidr.pod`
// +kubebuilder:printcolumn:name="Remapped Pod CIDR",type=string,JSONPath=`.status.remote.cidr.pod`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Desired External CIDR",type=string,JSONPath=`.spec.remote.cidr.external`,priority=1
// +kubebuilder:printcolumn:name="Remapped External CIDR",type=string,JSONPath=`.status.remote.cidr.external`,priority=1
// +kubebuilder:printcolumn:name="ClusterID",type=string,JSONPath=`.metadata.labels.liqo\.io/remote-cluster-id`,priority=1
type Configuration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ConfigurationSpec   `json:"spec,omitempty"`
	Status ConfigurationStatus `json:"status,omitempty"`
}

// ConfigurationList is a list of Configuration.
// +kubebuilder:object:root=true
type ConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Configuration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Configuration{}, &ConfigurationList{})
}
