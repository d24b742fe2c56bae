// Package v1alpha1 contains the market.peerkit.io/v1alpha1 API: seed 004's advertisement and
// contract, which upstream Liqo does not have. The group is our own, so upstream's controllers
// and tools ignore these kinds.
// +kubebuilder:object:generate=true
// +groupName=market.peerkit.io
package v1alpha1

import "github.com/peerkit/terraform-provider-liqo/internal/api/apigroup"

var (
	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = apigroup.NewSchemeBuilder("market.peerkit.io", "v1alpha1")

	// GroupVersion is the group and version of this package's kinds.
	GroupVersion = SchemeBuilder.GroupVersion

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
