// Package v1beta1 contains the networking.liqo.io/v1beta1 API: the network configuration,
// WireGuard gateways, public keys and tunnel connections of a peering.
// +kubebuilder:object:generate=true
// +groupName=networking.liqo.io
package v1beta1

import "github.com/peerkit/terraform-provider-liqo/internal/api/apigroup"

var (
	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = apigroup.NewSchemeBuilder("networking.liqo.io", "v1beta1")

	// GroupVersion is the group and version of this package's kinds.
	GroupVersion = SchemeBuilder.GroupVersion

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
