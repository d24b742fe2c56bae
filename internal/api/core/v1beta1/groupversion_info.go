// Package v1beta1 contains the core.liqo.io/v1beta1 API: ForeignCluster, the local view of a
// peered remote cluster and the status of the peering with it.
// +kubebuilder:object:generate=true
// +groupName=core.liqo.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this package's kinds.
	GroupVersion = schema.GroupVersion{Group: "core.liqo.io", Version: "v1beta1"}

	// SchemeBuilder registers this package's kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
