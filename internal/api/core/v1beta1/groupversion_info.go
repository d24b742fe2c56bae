// Package v1beta1 contains the core.liqo.io/v1beta1 API: ForeignCluster, the local view of a
// peered remote cluster and the status of the peering with it.
// +kubebuilder:object:generate=true
// +groupName=core.liqo.io
package v1beta1

import "github.com/peerkit/terraform-provider-liqo/internal/api/apigroup"

var (
	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = apigroup.NewSchemeBuilder("core.liqo.io", "v1beta1")

	// GroupVersion is the group and version of this package's kinds.
	GroupVersion = SchemeBuilder.GroupVersion

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
