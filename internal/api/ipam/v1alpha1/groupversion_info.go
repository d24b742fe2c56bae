// Package v1alpha1 contains the ipam.liqo.io/v1alpha1 API: Network, a network of a remote
// cluster and the local network it is remapped to; IP, a local address and the address of the
// cluster's external CIDR remote clusters reach it at.
// +kubebuilder:object:generate=true
// +groupName=ipam.liqo.io
package v1alpha1

import "github.com/peerkit/terraform-provider-liqo/internal/api/apigroup"

var (
	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = apigroup.NewSchemeBuilder("ipam.liqo.io", "v1alpha1")

	// GroupVersion is the group and version of this package's kinds.
	GroupVersion = SchemeBuilder.GroupVersion

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
