package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InternalFabricKind is the kind of InternalFabric.
const InternalFabricKind = "InternalFabric"

// InternalFabricSpecInterfaceNode is the nodes' side of a gateway's tunnels.
type InternalFabricSpecInterfaceNode struct {
	// Name is the name of the tunnel interface the fabric agent of every node creates towards
	// this gateway ("liqo." and 10 random characters, unique among InternalFabrics).
	Name string `json:"name"`
}

// InternalFabricSpecInterfaceGateway is the gateway's side of its tunnels.
type InternalFabricSpecInterfaceGateway struct {
	// IP is the gateway's address on the internal network (from the internal CIDR): the gateway
	// puts it on each of its tunnel interfaces and the nodes route the remote CIDRs to it.
	IP IP `json:"ip"`
}

// InternalFabricSpecInterface is the tunnel interfaces of a gateway.
type InternalFabricSpecInterface struct {
	// Node is the interface on every node that leads to this gateway.
	Node InternalFabricSpecInterfaceNode `json:"node"`
	// Gateway is the gateway's side of the tunnels.
	Gateway InternalFabricSpecInterfaceGateway `json:"gateway"`
}

// InternalFabricSpec is how every node reaches one gateway.
type InternalFabricSpec struct {
	// MTU is the MTU of the gateway's tunnel to the peer (the GatewayServer's or
	// GatewayClient's); the fabric's tunnel interfaces subtract their own overhead from it.
	MTU int `json:"mtu,omitempty"`
	// RemoteCIDRs are the peer's pod and external CIDRs, as this cluster sees them (after
	// remapping): every node routes them to Interface.Gateway.IP through its tunnel interface.
	RemoteCIDRs []CIDR `json:"remoteCIDRs,omitempty"`
	// Interface is the tunnel interfaces.
	Interface InternalFabricSpecInterface `json:"interface"`
	// GatewayIP is the gateway pod's address (its node's, for a host-network gateway): the
	// remote end of every node's tunnel to this gateway.
	GatewayIP IP `json:"gatewayIP"`
}

// InternalFabric is one gateway (GatewayServer or GatewayClient) of the cluster as the nodes
// see it: the controller manager makes one per gateway, in its namespace and named after the
// peer's cluster ID, and it goes with the gateway.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=liqo,shortName=if;ifabric
// +kubebuilder:printcolumn:name="Gateway IP",type=string,JSONPath=`.spec.gatewayIP`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type InternalFabric struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec InternalFabricSpec `json:"spec,omitempty"`
}

// InternalFabricList is a list of InternalFabrics.
// +kubebuilder:object:root=true
type InternalFabricList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InternalFabric `json:"items"`
}

func init() {
	SchemeBuilder.Register(&InternalFabric{}, &InternalFabricList{})
}
