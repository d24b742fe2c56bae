package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InternalNodeKind is the kind of InternalNode.
const InternalNodeKind = "InternalNode"

// InternalNodeSpecInterfaceGateway is the gateway's side of a node's tunnel.
type InternalNodeSpecInterfaceGateway struct {
	// Name is the name of the tunnel interface every gateway of the cluster creates towards this
	// node ("liqo." and 10 random characters, unique among InternalNodes).
	Name string `json:"name"`
}

// InternalNodeSpecInterfaceNode is the node's side of its tunnels.
type InternalNodeSpecInterfaceNode struct {
	// IP is the node's address on the internal network (from the internal CIDR, 10.80.0.0/16 by
	// default): the fabric agent on the node puts it on each of the node's tunnel interfaces, and
	// the gateways route a local pod's return traffic to it.
	IP IP `json:"ip"`
}

// InternalNodeSpecInterface is the tunnel interfaces of a node.
type InternalNodeSpecInterface struct {
	// Gateway is the interface on every gateway that leads to this node.
	Gateway InternalNodeSpecInterfaceGateway `json:"gateway"`
	// Node is the node's side of the tunnels.
	Node InternalNodeSpecInterfaceNode `json:"node"`
}

// InternalNodeSpec is what the controller manager allocates to a node.
type InternalNodeSpec struct {
	// Interface is the node's tunnel interfaces.
	Interface InternalNodeSpecInterface `json:"interface"`
}

// InternalNodeStatusNodeIP is the source addresses a host-network process of the node uses.
type InternalNodeStatusNodeIP struct {
	// Local is the source address towards a pod on the same node.
	Local *IP `json:"local,omitempty"`
	// Remote is the source address towards a pod on another node.
	Remote *IP `json:"remote,omitempty"`
}

// InternalNodeStatus is what the fabric agent on the node reports.
type InternalNodeStatus struct {
	// NodeIP is the node's source addresses, written by the node's fabric agent.
	NodeIP InternalNodeStatusNodeIP `json:"nodeIP"`
}

// InternalNode is a real (not virtual) node of the cluster on the internal network: the
// controller manager makes one per Node, with the same name, and deletes it with the Node.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=liqo,shortName=in;inode
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Node IP Local",type=string,JSONPath=`.status.nodeIP.local`
// +kubebuilder:printcolumn:name="Node IP Remote",type=string,JSONPath=`.status.nodeIP.remote`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type InternalNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InternalNodeSpec   `json:"spec,omitempty"`
	Status InternalNodeStatus `json:"status,omitempty"`
}

// InternalNodeList is a list of InternalNodes.
// +kubebuilder:object:root=true
type InternalNodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InternalNode `json:"items"`
}

func init() {
	SchemeBuilder.Register(&InternalNode{}, &InternalNodeList{})
}
