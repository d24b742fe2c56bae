package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scope is the scope of a route.
type Scope string

// The route scopes.
const (
	// GlobalScope is the global scope.
	GlobalScope Scope = "global"
	// LinkScope is the link scope (the destination is on the interface's link).
	LinkScope Scope = "link"
	// HostScope is the host scope.
	HostScope Scope = "host"
	// SiteScope is the site scope.
	SiteScope Scope = "site"
	// NowhereScope is the nowhere scope.
	NowhereScope Scope = "nowhere"
)

// Route is one route of a rule's routing table.
type Route struct {
	// Dst is the route's destination.
	Dst *CIDR `json:"dst"`
	// Src is the preferred source address.
	Src *IP `json:"src,omitempty"`
	// Gw is the next hop.
	Gw *IP `json:"gw,omitempty"`
	// Dev is the outgoing interface.
	Dev *string `json:"dev,omitempty"`
	// Onlink makes the next hop reachable on Dev even without a route to it.
	Onlink *bool `json:"onlink,omitempty"`
	// Scope is the route's scope.
	// +kubebuilder:validation:Enum=global;link;host;site;nowhere
	Scope *Scope `json:"scope,omitempty"`
	// TargetRef is the object the route exists for (bookkeeping; the agent ignores it).
	TargetRef *corev1.ObjectReference `json:"targetRef,omitempty"`
}

// Rule is one policy-routing rule and the routes of the table it selects.
type Rule struct {
	// Dst matches the destination.
	Dst *CIDR `json:"dst,omitempty"`
	// Src matches the source.
	Src *CIDR `json:"src,omitempty"`
	// Iif matches the input interface.
	Iif *string `json:"iif,omitempty"`
	// Oif matches the output interface.
	Oif *string `json:"oif,omitempty"`
	// FwMark matches the packet's mark.
	FwMark *int `json:"fwmark,omitempty"`
	// Priority is the rule's priority (the agent picks one when unset).
	Priority *int `json:"priority,omitempty"`
	// Routes are the routes of the table, added when the rule is.
	Routes []Route `json:"routes"`
	// TargetRef is the object the rule exists for (bookkeeping; the agent ignores it).
	TargetRef *corev1.ObjectReference `json:"targetRef,omitempty"`
}

// Table is one routing table and the rules that select it.
type Table struct {
	// Name is the table's name: the agent maps it to a table ID of its own.
	Name string `json:"name"`
	// Rules are the table's rules.
	// +kubebuilder:validation:MinItems=1
	Rules []Rule `json:"rules"`
	// TargetRef is the object the table exists for (bookkeeping; the agent ignores it).
	TargetRef *corev1.ObjectReference `json:"targetRef,omitempty"`
}

// RouteConfigurationSpec is the routing table to apply.
type RouteConfigurationSpec struct {
	// Table is the routing table and its rules.
	Table Table `json:"table,omitempty"`
}

// RouteConfigurationStatusConditionType is the type of a RouteConfiguration condition.
type RouteConfigurationStatusConditionType string

// The RouteConfiguration condition types.
const (
	// RouteConfigurationStatusConditionTypeApplied: the host applied the configuration.
	RouteConfigurationStatusConditionTypeApplied RouteConfigurationStatusConditionType = "Applied"
	// RouteConfigurationStatusConditionTypeError: the host failed to apply it.
	RouteConfigurationStatusConditionTypeError RouteConfigurationStatusConditionType = "Error"
)

// RouteConfigurationStatusCondition is one host's report on a RouteConfiguration.
type RouteConfigurationStatusCondition struct {
	// Host is the node (or gateway pod) that reports.
	Host string `json:"host"`
	// Type is the condition's type.
	Type RouteConfigurationStatusConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status metav1.ConditionStatus `json:"status"`
	// LastTransitionTime is when Status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// RouteConfigurationStatus is what the hosts that apply a RouteConfiguration report.
type RouteConfigurationStatus struct {
	// Conditions are the hosts' reports, one per host and type.
	Conditions []RouteConfigurationStatusCondition `json:"conditions,omitempty"`
}

// RouteConfiguration is a routing table with its policy rules, applied by the agents its
// labels select (networking.liqo.io/route-category: "fabric" for every node's fabric agent,
// "gateway" for the gateways; networking.liqo.io/route-subcategory and route-unique narrow it).
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=liqo,shortName=rcnf;rcnfg;rcfg;routecfg
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RouteConfiguration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RouteConfigurationSpec   `json:"spec,omitempty"`
	Status RouteConfigurationStatus `json:"status,omitempty"`
}

// RouteConfigurationList is a list of RouteConfigurations.
// +kubebuilder:object:root=true
type RouteConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RouteConfiguration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RouteConfiguration{}, &RouteConfigurationList{})
}
