package grantenforcement_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/peerkit/terraform-provider-liqo/controllers/grantenforcement"
)

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func ctr(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func sidecar(name string, requests corev1.ResourceList) corev1.Container {
	c := ctr(name, requests, rl("cpu", "1"))
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

// TestUsage: the effective requests and limits of Kubernetes' rules, keyed like the grant.
func TestUsage(t *testing.T) {
	grant := rl("cpu", "10", "requests.memory", "10Gi", "limits.cpu", "10", "pods", "10", "count/pods", "10", "nvidia.com/gpu", "1")
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want map[string]string
	}{
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{
			ctr("a", rl("cpu", "100m", "memory", "1Gi"), rl("cpu", "1")), ctr("b", rl("cpu", "200m", "memory", "512Mi"), rl("cpu", "2"))}},
			map[string]string{"cpu": "300m", "requests.memory": "1536Mi", "limits.cpu": "3", "pods": "1", "count/pods": "1", "nvidia.com/gpu": "0"}},
		{"an init container larger than the containers counts alone", corev1.PodSpec{
			InitContainers: []corev1.Container{ctr("init", rl("cpu", "1", "memory", "2Gi"), rl("cpu", "4"))},
			Containers:     []corev1.Container{ctr("a", rl("cpu", "300m", "memory", "1Gi"), rl("cpu", "1"))}},
			map[string]string{"cpu": "1", "requests.memory": "2Gi", "limits.cpu": "4"}},
		{"init containers take the maximum, not the sum", corev1.PodSpec{
			InitContainers: []corev1.Container{ctr("i1", rl("cpu", "500m"), rl("cpu", "1")), ctr("i2", rl("cpu", "700m"), rl("cpu", "1"))},
			Containers:     []corev1.Container{ctr("a", rl("cpu", "100m"), rl("cpu", "1"))}},
			map[string]string{"cpu": "700m"}},
		{"a sidecar adds to the containers and to the init containers after it", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar("proxy", rl("cpu", "200m")), ctr("init", rl("cpu", "500m"), rl("cpu", "1"))},
			Containers:     []corev1.Container{ctr("a", rl("cpu", "300m"), rl("cpu", "1"))}},
			map[string]string{"cpu": "700m"}}, // max(200m+500m, 300m+200m)
		{"overhead is added", corev1.PodSpec{Overhead: rl("cpu", "250m", "memory", "64Mi"),
			Containers: []corev1.Container{ctr("a", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "2"))}},
			map[string]string{"cpu": "1250m", "requests.memory": "1088Mi", "limits.cpu": "2250m"}},
		{"a missing request is the limit (the API server's defaulting of pods)", corev1.PodSpec{
			Containers: []corev1.Container{ctr("a", nil, rl("cpu", "2", "memory", "3Gi"))}},
			map[string]string{"cpu": "2", "requests.memory": "3Gi", "limits.cpu": "2"}},
		{"no request and no limit is zero (BestEffort)", corev1.PodSpec{
			Containers: []corev1.Container{ctr("a", nil, rl("cpu", "1"))}},
			map[string]string{"requests.memory": "0", "nvidia.com/gpu": "0"}},
		{"pod-level resources replace the containers' sum", corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: rl("cpu", "3"), Limits: rl("cpu", "5")},
			Containers: []corev1.Container{ctr("a", rl("cpu", "100m"), nil), ctr("b", rl("cpu", "100m"), nil)}},
			map[string]string{"cpu": "3", "limits.cpu": "5"}},
		{"an extended resource", corev1.PodSpec{
			Containers: []corev1.Container{ctr("a", nil, rl("cpu", "1", "nvidia.com/gpu", "1"))}},
			map[string]string{"nvidia.com/gpu": "1"}},
	} {
		got, err := grantenforcement.Usage(&tc.spec, grant)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(got) != len(grant) {
			t.Errorf("%s: usage %v has not one entry per grant key", tc.name, got)
		}
		for k, want := range tc.want {
			q := got[corev1.ResourceName(k)]
			if q.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("%s: %s = %s, want %s", tc.name, k, q.String(), want)
			}
		}
	}
}

// TestUsageUnboundedLimit: a container without a memory limit cannot fit a grant that names
// limits.memory; a pod-level limit bounds it; an extended resource a container does not ask
// for is not unbounded.
func TestUsageUnboundedLimit(t *testing.T) {
	grant := rl("limits.memory", "8Gi", "limits.nvidia.com/gpu", "1")
	spec := corev1.PodSpec{Containers: []corev1.Container{ctr("bounded", nil, rl("memory", "1Gi")), ctr("greedy", rl("memory", "1Gi"), nil)}}
	_, err := grantenforcement.Usage(&spec, grant)
	if err == nil || !strings.Contains(err.Error(), "container greedy") || !strings.Contains(err.Error(), "resources.limits.memory") {
		t.Errorf("want an error naming container greedy and the limit to set, got %v", err)
	}
	spec.Resources = &corev1.ResourceRequirements{Limits: rl("memory", "2Gi")}
	got, err := grantenforcement.Usage(&spec, grant)
	if err != nil {
		t.Fatalf("with a pod-level limit: %v", err)
	}
	if q := got["limits.memory"]; q.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("limits.memory = %s, want the pod-level 2Gi", q.String())
	}
	if q := got["limits.nvidia.com/gpu"]; !q.IsZero() {
		t.Errorf("limits.nvidia.com/gpu = %s, want 0", q.String())
	}
}

// TestExcess: equal to the grant fits; one unit more does not, and the message gives the
// resource, the total, its parts and the grant.
func TestExcess(t *testing.T) {
	grant := rl("cpu", "2", "pods", "3")
	if ex := grantenforcement.Excess(grant, rl("cpu", "1500m", "pods", "2"), rl("cpu", "500m", "pods", "1")); ex != nil {
		t.Errorf("exactly the grant: %v", ex)
	}
	ex := grantenforcement.Excess(grant, rl("cpu", "1500m", "pods", "3"), rl("cpu", "501m", "pods", "1"))
	want := []string{
		"cpu: 2001m requested in all (1500m by its other ShadowPods + 501m by this one), 2 granted",
		"pods: 4 requested in all (3 by its other ShadowPods + 1 by this one), 3 granted",
	}
	if strings.Join(ex, "\n") != strings.Join(want, "\n") {
		t.Errorf("Excess:\n got %q\nwant %q", ex, want)
	}
	// A resource nothing uses is not in excess, whatever is missing from used and want.
	if ex := grantenforcement.Excess(rl("memory", "1Gi"), corev1.ResourceList{}, corev1.ResourceList{}); ex != nil {
		t.Errorf("nothing used: %v", ex)
	}
}

// BenchmarkUsage: the arithmetic for one ShadowPod with an init container, a sidecar and two
// containers against a four-key grant.
func BenchmarkUsage(b *testing.B) {
	grant := rl("cpu", "10", "memory", "10Gi", "limits.cpu", "10", "pods", "10")
	spec := corev1.PodSpec{
		InitContainers: []corev1.Container{sidecar("proxy", rl("cpu", "200m")), ctr("init", rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "1"))},
		Containers:     []corev1.Container{ctr("a", rl("cpu", "300m", "memory", "1Gi"), rl("cpu", "1")), ctr("b", rl("cpu", "100m"), rl("cpu", "1"))},
	}
	for b.Loop() {
		if _, err := grantenforcement.Usage(&spec, grant); err != nil {
			b.Fatal(err)
		}
	}
}
