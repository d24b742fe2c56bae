package peering

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestGrantCovers: a grant matches the ask on every resource asked; resources the provider adds
// on its own (ephemeral-storage from its defaults, on nodes that have some) do not matter.
func TestGrantCovers(t *testing.T) {
	asked := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	for name, tc := range map[string]struct {
		granted corev1.ResourceList
		want    bool
	}{
		"exactly":         {corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m"), corev1.ResourceMemory: resource.MustParse("1Gi")}, true},
		"with a default":  {corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("20Gi")}, true},
		"less cpu":        {corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}, false},
		"memory missing":  {corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, false},
		"nothing granted": {nil, false},
	} {
		if got := grantCovers(tc.granted, asked); got != tc.want {
			t.Errorf("%s: grantCovers(%v) = %v, want %v", name, tc.granted, got, tc.want)
		}
	}
}
