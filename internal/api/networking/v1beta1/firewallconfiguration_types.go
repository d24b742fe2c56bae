package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1/firewall"
)

// FirewallConfigurationSpec is the nftables table to apply.
type FirewallConfigurationSpec struct {
	// Table is the nftables table.
	Table firewall.Table `json:"table"`
}

// FirewallConfigurationStatusConditionType is the type of a FirewallConfiguration condition.
type FirewallConfigurationStatusConditionType string

// The FirewallConfiguration condition types.
const (
	// FirewallConfigurationStatusConditionTypeApplied: the host applied the configuration.
	FirewallConfigurationStatusConditionTypeApplied FirewallConfigurationStatusConditionType = "Applied"
	// FirewallConfigurationStatusConditionTypeError: the host failed to apply it.
	FirewallConfigurationStatusConditionTypeError FirewallConfigurationStatusConditionType = "Error"
)

// FirewallConfigurationStatusCondition is one host's report on a FirewallConfiguration.
type FirewallConfigurationStatusCondition struct {
	// Host is the node (or gateway pod) that reports.
	Host string `json:"host"`
	// Type is the condition's type.
	Type FirewallConfigurationStatusConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status metav1.ConditionStatus `json:"status"`
	// LastTransitionTime is when Status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// FirewallConfigurationStatus is what the hosts that apply a FirewallConfiguration report.
type FirewallConfigurationStatus struct {
	// Conditions are the hosts' reports, one per host and type.
	Conditions []FirewallConfigurationStatusCondition `json:"conditions,omitempty"`
}

// FirewallConfiguration is an nftables table applied by the agents its labels select
// (networking.liqo.io/firewall-category: "fabric" for the nodes' fabric agents, "gateway" for
// the gateways; networking.liqo.io/firewall-subcategory "all-nodes" or "single-node" with
// networking.liqo.io/firewall-unique naming the node).
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=liqo,shortName=fw;fwconfig;fwcfg
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FirewallConfiguration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FirewallConfigurationSpec   `json:"spec,omitempty"`
	Status FirewallConfigurationStatus `json:"status,omitempty"`
}

// FirewallConfigurationList is a list of FirewallConfigurations.
// +kubebuilder:object:root=true
type FirewallConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FirewallConfiguration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FirewallConfiguration{}, &FirewallConfigurationList{})
}
