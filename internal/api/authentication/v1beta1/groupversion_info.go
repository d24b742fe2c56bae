// Package v1beta1 contains the authentication.liqo.io/v1beta1 API: tenants, identities and
// resource slices, the objects through which two peered clusters exchange credentials and
// negotiate the resources one of them lends to the other.
// +kubebuilder:object:generate=true
// +groupName=authentication.liqo.io
package v1beta1

import "github.com/peerkit/terraform-provider-liqo/internal/api/apigroup"

var (
	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = apigroup.NewSchemeBuilder("authentication.liqo.io", "v1beta1")

	// GroupVersion is the group and version of this package's kinds.
	GroupVersion = SchemeBuilder.GroupVersion

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
