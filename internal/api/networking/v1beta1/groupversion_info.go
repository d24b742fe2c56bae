// Package v1beta1 contains the networking.liqo.io/v1beta1 API: the network configuration,
// WireGuard gateways, public keys and tunnel connections of a peering.
// +kubebuilder:object:generate=true
// +groupName=networking.liqo.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this package's kinds.
	GroupVersion = schema.GroupVersion{Group: "networking.liqo.io", Version: "v1beta1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
