package grantenforcement

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// unboundedWithoutLimit are the resources a container uses without bound when it sets no
// limit: a grant that names their limits cannot hold such a pod. (An extended resource, such
// as a GPU, is not used at all by a container that does not ask for it.)
var unboundedWithoutLimit = map[corev1.ResourceName]bool{
	corev1.ResourceCPU: true, corev1.ResourceMemory: true, corev1.ResourceEphemeralStorage: true,
}

// Usage is what one pod spec counts against each resource of a grant, keyed like the grant
// (as a ResourceQuota's hard limits are):
//   - "pods" (or "count/pods"): 1;
//   - "limits.<name>": the pod's effective limit of <name>;
//   - "requests.<name>" or a bare "<name>": the pod's effective request of <name>.
//
// Effective values follow Kubernetes' rules (k8s.io/component-helpers/resource, as the
// scheduler and ResourceQuota use them): regular containers add up; an init container counts
// as the maximum of itself plus the restartable (sidecar) init containers before it, and the
// pod takes the larger of that and its regular containers plus sidecars; pod-level resources,
// when set, replace the containers' sum; the pod's overhead is added. The spec is first
// defaulted as the API server defaults a Pod (a ShadowPod is a custom resource, so nothing
// defaulted it): a container's missing request is its limit. A missing request is zero. A
// missing limit of CPU, memory or ephemeral storage is unbounded: when the grant names that
// limit, Usage returns an error saying what to set, with the usage counting the limits that
// are set.
func Usage(spec *corev1.PodSpec, grant corev1.ResourceList) (corev1.ResourceList, error) {
	pod := &corev1.Pod{Spec: *spec.DeepCopy()}
	defaultRequests(pod)
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	out := corev1.ResourceList{}
	var err error
	for key := range grant {
		switch {
		case key == corev1.ResourcePods || key == "count/pods":
			out[key] = *resource.NewQuantity(1, resource.DecimalSI)
		case strings.HasPrefix(string(key), "limits."):
			name := corev1.ResourceName(strings.TrimPrefix(string(key), "limits."))
			if c := unlimited(pod, name); c != "" && err == nil {
				err = fmt.Errorf("container %s sets no %s limit, and the grant limits %s: set resources.limits.%s on every container (or pod-level limits)",
					c, name, key, name)
			}
			out[key] = quantity(limits, name)
		default:
			out[key] = quantity(requests, corev1.ResourceName(strings.TrimPrefix(string(key), "requests.")))
		}
	}
	return out, err
}

func quantity(l corev1.ResourceList, name corev1.ResourceName) resource.Quantity {
	if q, ok := l[name]; ok {
		return q.DeepCopy()
	}
	return resource.Quantity{Format: resource.DecimalSI}
}

// defaultRequests sets, as the API server's defaulting of a Pod does, the missing requests
// of each container and of the pod level to their limits.
func defaultRequests(pod *corev1.Pod) {
	fill := func(r *corev1.ResourceRequirements) {
		for name, q := range r.Limits {
			if _, ok := r.Requests[name]; ok {
				continue
			}
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = q.DeepCopy()
		}
	}
	for i := range pod.Spec.InitContainers {
		fill(&pod.Spec.InitContainers[i].Resources)
	}
	for i := range pod.Spec.Containers {
		fill(&pod.Spec.Containers[i].Resources)
	}
	if pod.Spec.Resources != nil {
		fill(pod.Spec.Resources)
	}
}

// unlimited names a container that can use name without bound, or returns "".
func unlimited(pod *corev1.Pod, name corev1.ResourceName) string {
	if !unboundedWithoutLimit[name] {
		return ""
	}
	if pod.Spec.Resources != nil {
		if _, ok := pod.Spec.Resources.Limits[name]; ok {
			return ""
		}
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if _, ok := c.Resources.Limits[name]; !ok {
				return c.Name
			}
		}
	}
	return ""
}

// Add adds b to a, in place, for the keys of b.
func Add(a, b corev1.ResourceList) {
	for k, q := range b {
		sum := quantity(a, k)
		sum.Add(q)
		a[k] = sum
	}
}

// Excess describes, for each key of grant, how used plus want goes beyond it, sorted by
// resource; nil when everything fits.
func Excess(grant, used, want corev1.ResourceList) []string {
	var out []string
	for key, granted := range grant {
		u, w := quantity(used, key), quantity(want, key)
		total := u.DeepCopy()
		total.Add(w)
		if total.Cmp(granted) > 0 {
			out = append(out, fmt.Sprintf("%s: %s requested in all (%s by its other ShadowPods + %s by this one), %s granted",
				key, total.String(), u.String(), w.String(), granted.String()))
		}
	}
	sort.Strings(out)
	return out
}
