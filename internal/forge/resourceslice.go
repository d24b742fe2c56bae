package forge

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// ResourceSliceOptions are what a ResourceSlice's writer decides.
type ResourceSliceOptions struct {
	// ConsumerID is the consumer's own cluster ID, in spec.consumerClusterID ("": not set; the
	// API forbids removing it once set, so an empty one keeps what the object has).
	ConsumerID string
	// Class selects how the provider serves the slice ("": the API's default).
	Class authv1beta1.ResourceSliceClass
	// Resources are the quantities asked for (copied).
	Resources corev1.ResourceList
	// CreateVirtualNode asks the consumer's controllers for a virtual node once the slice is
	// granted (annotation consts.CreateVirtualNodeAnnotation).
	CreateVirtualNode bool
	// Contract names the Contract (same namespace) the provider grants the slice by
	// (annotation consts.ContractAnnotation; "": none, the annotation is removed).
	Contract string
}

// MutateResourceSlice makes rs the consumer's request for resources of the provider providerID
// as o says: labelled consts.RemoteClusterIDLabel=providerID, consts.ReplicationLabel=true and
// consts.ReplicationDestinationLabel=providerID (the consumer's controllers replicate it to the
// provider), annotated with whether to create
// a virtual node and with the contract its grant follows, with the provider's ID in spec.providerClusterID.
func MutateResourceSlice(rs *authv1beta1.ResourceSlice, providerID string, o ResourceSliceOptions) {
	// The destination too, as upstream's forge: upstream's consumer signs (spec.csr) and its CRD
	// replicator sends only slices that name it.
	setLabels(rs, map[string]string{consts.RemoteClusterIDLabel: providerID, consts.ReplicationLabel: "true",
		consts.ReplicationDestinationLabel: providerID})
	annotations := rs.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[consts.CreateVirtualNodeAnnotation] = strconv.FormatBool(o.CreateVirtualNode)
	if o.Contract != "" {
		annotations[consts.ContractAnnotation] = o.Contract
	} else {
		delete(annotations, consts.ContractAnnotation)
	}
	rs.SetAnnotations(annotations)
	provider := corev1beta1.ClusterID(providerID)
	rs.Spec.ProviderClusterID = &provider
	if o.ConsumerID != "" {
		consumer := corev1beta1.ClusterID(o.ConsumerID)
		rs.Spec.ConsumerClusterID = &consumer
	}
	rs.Spec.Class = o.Class
	rs.Spec.Resources = o.Resources.DeepCopy()
}
