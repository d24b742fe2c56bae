package vnode

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// Taint is the NoExecute taint of virtual nodes: only pods that tolerate it (those of offloaded
// namespaces) run there.
var Taint = corev1.Taint{Key: "virtual-node.liqo.io/not-allowed", Value: "true", Effect: corev1.TaintEffectNoExecute}

// Version is what virtual nodes report as their kubelet version.
const Version = "liqo-vk/v" + version.Version

// NodeFor returns the Node that stands for a VirtualNode.
func NodeFor(vn *offv1beta1.VirtualNode) *corev1.Node {
	labels := map[string]string{
		consts.TypeLabel:                consts.VirtualNodeType,
		consts.RemoteClusterIDLabel:     string(vn.Spec.ClusterID),
		corev1.LabelHostname:            vn.Name,
		corev1.LabelOSStable:            "linux",
		corev1.LabelArchStable:          "amd64",
		"node-role.kubernetes.io/agent": "",
	}
	for k, v := range vn.Spec.Labels {
		labels[k] = v
	}
	taints := append([]corev1.Taint{Taint}, vn.Spec.Taints...)
	capacity := vn.Spec.ResourceQuota.Hard.DeepCopy()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: vn.Name, Labels: labels, Annotations: vn.Spec.Annotations},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: Version, OperatingSystem: "linux", Architecture: "amd64"},
			Conditions:  conditions(true, ReasonProviderReachable, reachableMessage),
		},
	}
}

// Reasons of the virtual node's Ready condition.
const (
	// ReasonProviderReachable: Ready, the provider's API server answers and it has a Ready node
	// (or none of its own).
	ReasonProviderReachable = "ProviderReachable"
	// ReasonProviderUnreachable: not Ready, the provider's API server does not answer.
	ReasonProviderUnreachable = "ProviderUnreachable"
	// ReasonProviderNoReadyNode: not Ready, the provider answers but none of the nodes the
	// slice's pods may run on is Ready (the provider says so on its copy of the slice).
	ReasonProviderNoReadyNode = "ProviderNoReadyNode"
)

// conditions are the node's conditions: Ready or not, with its reason and message, and no pressure.
func conditions(ready bool, reason, msg string) []corev1.NodeCondition {
	now := metav1.Now()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	out := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}}
	for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable} {
		out = append(out, corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: "VirtualNode", LastHeartbeatTime: now, LastTransitionTime: now})
	}
	return out
}
