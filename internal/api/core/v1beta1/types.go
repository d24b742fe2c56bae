package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterID identifies a cluster. It is a DNS label: lower-case alphanumerics and '-',
// starting and ending with an alphanumeric.
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
// +kubebuilder:validation:MaxLength=63
type ClusterID string

// RoleType is the role of a remote cluster from the local cluster's point of view.
// +kubebuilder:validation:Enum=Consumer;Provider;ConsumerAndProvider;Unknown
type RoleType string

const (
	// ConsumerRole means the remote cluster consumes resources of the local cluster.
	ConsumerRole RoleType = "Consumer"
	// ProviderRole means the remote cluster provides resources to the local cluster.
	ProviderRole RoleType = "Provider"
	// ConsumerAndProviderRole means the peering goes both ways.
	ConsumerAndProviderRole RoleType = "ConsumerAndProvider"
	// UnknownRole means no module has established a direction yet.
	UnknownRole RoleType = "Unknown"
)

// ConditionType names one aspect of a peering.
// +kubebuilder:validation:Enum=APIServerStatus;NetworkConnectionStatus;NetworkGatewayServerStatus;NetworkGatewayClientStatus;NetworkGatewayPresence;NetworkConfigurationStatus;AuthIdentityControlPlaneStatus;AuthTenantStatus;OffloadingVirtualNodeStatus;OffloadingNodeStatus
type ConditionType string

// The condition types a ForeignCluster reports, per module.
const (
	APIServerStatusCondition                ConditionType = "APIServerStatus"
	NetworkConnectionStatusCondition        ConditionType = "NetworkConnectionStatus"
	NetworkGatewayServerStatusCondition     ConditionType = "NetworkGatewayServerStatus"
	NetworkGatewayClientStatusCondition     ConditionType = "NetworkGatewayClientStatus"
	NetworkGatewayPresenceCondition         ConditionType = "NetworkGatewayPresence"
	NetworkConfigurationStatusCondition     ConditionType = "NetworkConfigurationStatus"
	AuthIdentityControlPlaneStatusCondition ConditionType = "AuthIdentityControlPlaneStatus"
	AuthTenantStatusCondition               ConditionType = "AuthTenantStatus"
	OffloadingVirtualNodeStatusCondition    ConditionType = "OffloadingVirtualNodeStatus"
	OffloadingNodeStatusCondition           ConditionType = "OffloadingNodeStatus"
)

// ConditionStatusType is the state of one condition.
// +kubebuilder:validation:Enum=None;Pending;Established;Error;Ready;NotReady;SomeNotReady
type ConditionStatusType string

// The states a condition can be in.
const (
	ConditionStatusNone         ConditionStatusType = "None"
	ConditionStatusPending      ConditionStatusType = "Pending"
	ConditionStatusEstablished  ConditionStatusType = "Established"
	ConditionStatusError        ConditionStatusType = "Error"
	ConditionStatusReady        ConditionStatusType = "Ready"
	ConditionStatusNotReady     ConditionStatusType = "NotReady"
	ConditionStatusSomeNotReady ConditionStatusType = "SomeNotReady"
)

// Condition is the state of one aspect of a peering.
type Condition struct {
	// Type of the condition.
	Type ConditionType `json:"type"`
	// Status of the condition.
	// +kubebuilder:default=None
	Status ConditionStatusType `json:"status"`
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
