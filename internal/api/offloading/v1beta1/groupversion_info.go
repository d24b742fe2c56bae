// Package v1beta1 contains the offloading.liqo.io/v1beta1 API: virtual nodes, namespace
// offloading and maps, shadow pods, the objects through which a consumer cluster runs
// workloads on the resources a provider cluster lends it.
// +kubebuilder:object:generate=true
// +groupName=offloading.liqo.io
package v1beta1

import "github.com/peerkit/terraform-provider-liqo/internal/api/apigroup"

var (
	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = apigroup.NewSchemeBuilder("offloading.liqo.io", "v1beta1")

	// GroupVersion is the group and version of this package's kinds.
	GroupVersion = SchemeBuilder.GroupVersion

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
