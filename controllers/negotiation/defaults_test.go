package negotiation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
)

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// A slice that names no resources (as upstream liqoctl makes it) gets the defaults, capped by
// what is left; what it names it gets as asked; a resource with nothing left is not granted.
func TestWithDefaults(t *testing.T) {
	defaults := list("cpu", "4", "memory", "8Gi", "pods", "110")
	for _, c := range []struct {
		name            string
		want, available corev1.ResourceList
		granted         corev1.ResourceList
	}{
		{"none asked, plenty left", nil, list("cpu", "16", "memory", "64Gi", "pods", "500"), list("cpu", "4", "memory", "8Gi", "pods", "110")},
		{"none asked, little left", nil, list("cpu", "1500m", "memory", "64Gi", "pods", "0"), list("cpu", "1500m", "memory", "8Gi")},
		{"cpu asked", list("cpu", "2"), list("cpu", "16", "memory", "1Gi"), list("cpu", "2", "memory", "1Gi")},
		{"nothing shared", nil, nil, nil},
	} {
		got := withDefaults(c.want, defaults, c.available)
		if len(got) != len(c.granted) {
			t.Errorf("%s: granted %v, want %v", c.name, got, c.granted)
			continue
		}
		for k, q := range c.granted {
			if g, ok := got[k]; !ok || g.Cmp(q) != 0 {
				t.Errorf("%s: granted %v, want %v", c.name, got, c.granted)
			}
		}
	}
}

// A grant stays accepted while it holds what the slice names, exactly, plus defaults only.
func TestGrantedAsAsked(t *testing.T) {
	defaults := list("cpu", "4", "memory", "8Gi")
	s := &authv1beta1.ResourceSlice{}
	s.Spec.Resources = list("cpu", "2")
	s.Status.Resources = list("cpu", "2", "memory", "3Gi")
	if !grantedAsAsked(s, defaults) {
		t.Error("a grant of what was asked plus a capped default is not accepted")
	}
	s.Spec.Resources = list("cpu", "3")
	if grantedAsAsked(s, defaults) {
		t.Error("a grant of cpu 2 is accepted for a slice now asking 3")
	}
	s.Spec.Resources = list("cpu", "2")
	s.Status.Resources = list("cpu", "2", "nvidia.com/gpu", "1")
	if grantedAsAsked(s, defaults) {
		t.Error("a grant of an unasked, non-default resource is accepted")
	}
}
