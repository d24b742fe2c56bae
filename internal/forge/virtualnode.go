package forge

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// VirtualNodeOptions are what a VirtualNode's writer decides.
type VirtualNodeOptions struct {
	// ProviderID is the cluster the node stands for (spec.clusterID, label
	// consts.RemoteClusterIDLabel).
	ProviderID string
	// ResourceSlice names the consumer's ResourceSlice the node is made from (label
	// consts.ResourceSliceNameLabel; "": none).
	ResourceSlice string
	// KubeconfigSecret names the Secret holding the consumer's kubeconfig of the provider.
	KubeconfigSecret string
	// Resources are what the node offers (spec.resourceQuota.hard, copied).
	Resources corev1.ResourceList
	// NodeLabels are added to the Node (spec.labels, copied).
	NodeLabels map[string]string
	// CreateNode creates the Node.
	CreateNode bool
	// DisableNetworkCheck leaves the network out of the Node's conditions (nil: kept as it is).
	DisableNetworkCheck *bool
	// OffloadingPatch is applied to what is offloaded through the node (nil: none; copied).
	OffloadingPatch *offv1beta1.OffloadingPatch
}

// MutateVirtualNode makes vn the virtual node o describes: labelled with the provider's ID and
// its ResourceSlice, with the provider's ID, the kubeconfig Secret, the resources, the node
// labels, the offloading patch and the switches in its spec. The rest of the spec (upstream's
// template, images, classes) is left as it is.
func MutateVirtualNode(vn *offv1beta1.VirtualNode, o VirtualNodeOptions) {
	labels := map[string]string{consts.RemoteClusterIDLabel: o.ProviderID}
	if o.ResourceSlice != "" {
		labels[consts.ResourceSliceNameLabel] = o.ResourceSlice
	}
	setLabels(vn, labels)
	vn.Spec.ClusterID = corev1beta1.ClusterID(o.ProviderID)
	vn.Spec.CreateNode = ptr.To(o.CreateNode)
	if o.DisableNetworkCheck != nil {
		vn.Spec.DisableNetworkCheck = ptr.To(*o.DisableNetworkCheck)
	}
	vn.Spec.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: o.KubeconfigSecret}
	vn.Spec.ResourceQuota.Hard = o.Resources.DeepCopy()
	vn.Spec.Labels = maps.Clone(o.NodeLabels)
	vn.Spec.OffloadingPatch = o.OffloadingPatch.DeepCopy()
}
