package firewall

import "math"

// ChainType is the nftables type of a base chain.
type ChainType string

// The chain types.
const (
	// ChainTypeFilter holds filter rules.
	ChainTypeFilter ChainType = "filter"
	// ChainTypeRoute holds route rules.
	ChainTypeRoute ChainType = "route"
	// ChainTypeNAT holds NAT rules.
	ChainTypeNAT ChainType = "nat"
)

// ChainPolicy is what a base chain does with a packet no rule decided on.
type ChainPolicy string

// The chain policies.
const (
	// ChainPolicyDrop drops the packet.
	ChainPolicyDrop ChainPolicy = "drop"
	// ChainPolicyAccept accepts the packet.
	ChainPolicyAccept ChainPolicy = "accept"
)

// ChainHook is the netfilter hook a base chain is attached to.
type ChainHook string

// The netfilter hooks (variables, as upstream's, so that their address can be taken).
var (
	// ChainHookPrerouting is the prerouting hook.
	ChainHookPrerouting ChainHook = "prerouting"
	// ChainHookInput is the input hook.
	ChainHookInput ChainHook = "input"
	// ChainHookForward is the forward hook.
	ChainHookForward ChainHook = "forward"
	// ChainHookOutput is the output hook.
	ChainHookOutput ChainHook = "output"
	// ChainHookPostrouting is the postrouting hook.
	ChainHookPostrouting ChainHook = "postrouting"
	// ChainHookIngress is the ingress hook.
	ChainHookIngress ChainHook = "ingress"
)

// ChainPriority orders a base chain among the others of its hook (lower first).
type ChainPriority int32

// The netfilter priorities of linux/netfilter_ipv4.h.
var (
	// ChainPriorityFirst runs before everything.
	ChainPriorityFirst ChainPriority = math.MinInt32
	// ChainPriorityConntrackDefrag is defragmentation's.
	ChainPriorityConntrackDefrag ChainPriority = -400
	// ChainPriorityRaw is the raw table's.
	ChainPriorityRaw ChainPriority = -300
	// ChainPrioritySELinuxFirst is SELinux's first.
	ChainPrioritySELinuxFirst ChainPriority = -225
	// ChainPriorityConntrack is conntrack's.
	ChainPriorityConntrack ChainPriority = -200
	// ChainPriorityMangle is the mangle table's.
	ChainPriorityMangle ChainPriority = -150
	// ChainPriorityNATDest is destination NAT's.
	ChainPriorityNATDest ChainPriority = -100
	// ChainPriorityFilter is the filter table's (zero).
	ChainPriorityFilter ChainPriority
	// ChainPrioritySecurity is the security table's.
	ChainPrioritySecurity ChainPriority = 50
	// ChainPriorityNATSource is source NAT's.
	ChainPriorityNATSource ChainPriority = 100
	// ChainPrioritySELinuxLast is SELinux's last.
	ChainPrioritySELinuxLast ChainPriority = 225
	// ChainPriorityConntrackHelper is the conntrack helpers'.
	ChainPriorityConntrackHelper ChainPriority = 300
	// ChainPriorityConntrackConfirm is conntrack confirmation's.
	ChainPriorityConntrackConfirm ChainPriority = math.MaxInt32
	// ChainPriorityLast runs after everything.
	ChainPriorityLast ChainPriority = math.MaxInt32
)

// Chain is one base chain of a table; its rules run in order.
type Chain struct {
	// Name is the name of the chain in its table.
	Name *string `json:"name"`
	// Rules are the chain's rules, all of one kind (NAT, filter or route).
	Rules RulesSet `json:"rules"`
	// Type is the nftables type of the chain.
	// +kubebuilder:validation:Enum="filter";"route";"nat"
	Type ChainType `json:"type"`
	// Policy is what the chain does with a packet no rule decided on.
	// +kubebuilder:validation:Enum="drop";"accept"
	Policy *ChainPolicy `json:"policy"`
	// Hook is the netfilter hook the chain is attached to.
	// +kubebuilder:validation:Enum="prerouting";"input";"forward";"output";"postrouting";"ingress"
	Hook *ChainHook `json:"hook"`
	// Priority orders the chain among the others of its hook.
	// +kubebuilder:default=0
	Priority *ChainPriority `json:"priority"`
}

// RulesSet holds the rules of a chain: only one of its lists is set.
// +kubebuilder:validation:MaxProperties=1
type RulesSet struct {
	// NatRules are the rules of a nat chain.
	NatRules []NatRule `json:"natRules,omitempty"`
	// FilterRules are the rules of a filter chain.
	FilterRules []FilterRule `json:"filterRules,omitempty"`
	// RouteRules are the rules of a route chain.
	RouteRules []RouteRule `json:"routeRules,omitempty"`
}

// RouteRule is a rule of a route chain (upstream defines no match or action for it yet).
type RouteRule struct {
	// Name is the name of the rule.
	Name *string `json:"name,omitempty"`
}
