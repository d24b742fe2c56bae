package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GeneveTunnelSpec is one tunnel between a node and a gateway.
type GeneveTunnelSpec struct {
	// ID is the tunnel's Geneve VNI (24 bits, unique in the cluster); the VXLAN fallback uses
	// it as the VXLAN ID. The node's interface is InternalFabric.Spec.Interface.Node.Name, the
	// gateway's InternalNode.Spec.Interface.Gateway.Name; both use this ID.
	ID uint32 `json:"id"`
	// InternalNodeRef names the InternalNode (cluster-scoped) of the node's end.
	InternalNodeRef *corev1.ObjectReference `json:"internalNodeRef"`
	// InternalFabricRef names the InternalFabric (name and namespace) of the gateway's end.
	InternalFabricRef *corev1.ObjectReference `json:"internalFabricRef"`
}

// GeneveTunnel is the tunnel of one (InternalFabric, InternalNode) pair: the controller manager
// makes one per pair, named "<fabric>-<node>" in the fabric's namespace and labelled with both
// names, and deletes it with either.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=liqo,shortName=gvtn
type GeneveTunnel struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GeneveTunnelSpec `json:"spec,omitempty"`
}

// GeneveTunnelList is a list of GeneveTunnels.
// +kubebuilder:object:root=true
type GeneveTunnelList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GeneveTunnel `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GeneveTunnel{}, &GeneveTunnelList{})
}
