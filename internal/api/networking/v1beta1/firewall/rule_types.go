package firewall

import corev1 "k8s.io/api/core/v1"

// FilterAction is what a filter rule does with a packet it matches.
type FilterAction string

// The filter actions.
const (
	// ActionCtMark sets the connection's conntrack mark to Value.
	ActionCtMark FilterAction = "ctmark"
	// ActionSetMetaMarkFromCtMark copies the connection's conntrack mark to the packet's mark.
	ActionSetMetaMarkFromCtMark FilterAction = "metamarkfromctmark"
	// ActionTCPMssClamp clamps the TCP MSS of SYN packets to Value (or to the route's MTU).
	ActionTCPMssClamp FilterAction = "tcpmssclamp"
	// ActionAccept accepts the packet.
	ActionAccept FilterAction = "accept"
	// ActionDrop drops the packet.
	ActionDrop FilterAction = "drop"
	// ActionReject rejects the packet with an answer.
	ActionReject FilterAction = "reject"
	// ActionNotrack exempts the packet from connection tracking (upstream's chart CRD accepts
	// it though v1.2.0's Go types do not name it).
	ActionNotrack FilterAction = "notrack"
)

// FilterRule is a rule of a filter chain.
type FilterRule struct {
	// Name identifies the rule in its chain.
	Name *string `json:"name,omitempty"`
	// Counter counts the packets the rule matches.
	// +kubebuilder:default=true
	Counter bool `json:"counter"`
	// Match are the conditions of the rule, all of which must hold.
	Match []Match `json:"match"`
	// Action is what the rule does with a packet it matches.
	// +kubebuilder:validation:Enum=ctmark;metamarkfromctmark;tcpmssclamp;accept;drop;reject;notrack
	Action FilterAction `json:"action"`
	// Value is the argument of the action (the mark of ctmark, the MSS of tcpmssclamp).
	Value *string `json:"value,omitempty"`
}

// NatType is the kind of translation of a NAT rule.
type NatType string

// The NAT kinds.
const (
	// NatTypeDestination rewrites the destination address to To.
	NatTypeDestination NatType = "dnat"
	// NatTypeSource rewrites the source address to To. A rule whose To is the source itself
	// (or its CIDR) keeps the source: the fabric uses it so that no later masquerade (the CNI's)
	// rewrites a pod's address towards a remote cluster.
	NatTypeSource NatType = "snat"
	// NatTypeMasquerade rewrites the source to the outgoing interface's address.
	NatTypeMasquerade NatType = "masquerade"
)

// NatRule is a rule of a nat chain.
type NatRule struct {
	// Name identifies the rule in its chain.
	Name *string `json:"name,omitempty"`
	// Match are the conditions of the rule, all of which must hold.
	Match []Match `json:"match"`
	// NatType is the kind of translation.
	// +kubebuilder:validation:Enum=dnat;snat;masquerade
	NatType NatType `json:"natType"`
	// To is the address (or CIDR, translated one to one) the packet is translated to.
	To *string `json:"to,omitempty"`
	// TargetRef is the object the rule exists for (for the controllers' bookkeeping; the agent
	// ignores it).
	TargetRef *corev1.ObjectReference `json:"targetRef,omitempty"`
}

// MatchOperation says whether a match holds when its value matches or when it does not.
type MatchOperation string

// The match operations.
const (
	// MatchOperationEq holds when the value matches.
	MatchOperationEq MatchOperation = "eq"
	// MatchOperationNeq holds when the value does not match.
	MatchOperationNeq MatchOperation = "neq"
)

// MatchPosition is the source or destination side of a packet.
type MatchPosition string

// The packet sides.
const (
	// MatchPositionSrc is the source address or port.
	MatchPositionSrc MatchPosition = "src"
	// MatchPositionDst is the destination address or port.
	MatchPositionDst MatchPosition = "dst"
)

// MatchDevPosition is the input or output interface of a packet.
type MatchDevPosition string

// The interface sides.
const (
	// MatchDevPositionIn is the input interface.
	MatchDevPositionIn MatchDevPosition = "in"
	// MatchDevPositionOut is the output interface.
	MatchDevPositionOut MatchDevPosition = "out"
)

// L4Proto is a transport protocol.
type L4Proto string

// The transport protocols.
const (
	// L4ProtoTCP is TCP.
	L4ProtoTCP L4Proto = "tcp"
	// L4ProtoUDP is UDP.
	L4ProtoUDP L4Proto = "udp"
)

// MatchIP matches an address of the packet.
type MatchIP struct {
	// Value is an address, a CIDR or a range (10.0.0.1-10.0.0.20).
	Value string `json:"value"`
	// Position is the side of the packet the address is on.
	// +kubebuilder:validation:Enum=src;dst
	Position MatchPosition `json:"position"`
}

// MatchPort matches a port of the packet.
type MatchPort struct {
	// Value is a port or a range (3000-4000).
	Value string `json:"value"`
	// Position is the side of the packet the port is on.
	// +kubebuilder:validation:Enum=src;dst
	Position MatchPosition `json:"position"`
}

// MatchDev matches an interface of the packet.
type MatchDev struct {
	// Value is the interface's name.
	Value string `json:"value"`
	// Position is whether the packet comes in or goes out through it.
	// +kubebuilder:validation:Enum=in;out
	Position MatchDevPosition `json:"position"`
}

// MatchProto matches the transport protocol of the packet.
type MatchProto struct {
	// Value is the protocol.
	// +kubebuilder:validation:Enum=tcp;udp
	Value L4Proto `json:"value"`
}

// Match is one condition of a rule: the fields set all hold (or, with Op neq, do not).
type Match struct {
	// Op is eq (the fields match) or neq (they do not).
	// +kubebuilder:validation:Enum=eq;neq
	Op MatchOperation `json:"op"`
	// IP matches an address.
	IP *MatchIP `json:"ip,omitempty"`
	// Port matches a port.
	Port *MatchPort `json:"port,omitempty"`
	// Proto matches the transport protocol.
	Proto *MatchProto `json:"proto,omitempty"`
	// Dev matches an interface.
	Dev *MatchDev `json:"dev,omitempty"`
}
