// Package v1beta1 contains the authentication.liqo.io/v1beta1 API: tenants, identities and
// resource slices, the objects through which two peered clusters exchange credentials and
// negotiate the resources one of them lends to the other.
// +kubebuilder:object:generate=true
// +groupName=authentication.liqo.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this package's kinds.
	GroupVersion = schema.GroupVersion{Group: "authentication.liqo.io", Version: "v1beta1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
