// Package apigroup builds the scheme registration of one of our API group versions, the same
// way for every API package (authentication, core, ipam, networking, offloading).
package apigroup

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// NewSchemeBuilder returns the builder with which an API package registers its kinds, under
// the given group and version, with a runtime.Scheme. The package exports the builder's
// GroupVersion and AddToScheme as its own.
func NewSchemeBuilder(group, version string) *scheme.Builder {
	return &scheme.Builder{GroupVersion: schema.GroupVersion{Group: group, Version: version}}
}
