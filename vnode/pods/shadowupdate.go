package pods

// The cached ShadowPods are thin (thinShadow): of their pod spec they keep only what a pod may
// change after its creation (its containers' images, activeDeadlineSeconds) and what the
// reflector reports (the service account's name). The full spec would be most of a cached
// ShadowPod's size (58 of the virtual kubelet's 171 MB of live heap at 10,000 pods, README's
// Fleet scale), and a ShadowPod's spec is immutable but for those parts. So an update is a JSON
// patch (RFC 6902) of those parts alone, never a PUT of the cached object.

import (
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
)

// thinShadow keeps of a ShadowPod going into the cache its metadata (without managed fields),
// its status, and of its pod spec the containers' and init containers' names and images,
// activeDeadlineSeconds and serviceAccountName: what shadowPatch compares and the reflector
// reads. The containers keep their order, so an index in the cache is an index on the server.
func thinShadow(obj any) (any, error) {
	if sp, ok := obj.(*offv1beta1.ShadowPod); ok {
		full := &sp.Spec.Pod
		sp.Spec.Pod = corev1.PodSpec{Containers: thinContainers(full.Containers), InitContainers: thinContainers(full.InitContainers),
			ActiveDeadlineSeconds: full.ActiveDeadlineSeconds, ServiceAccountName: full.ServiceAccountName}
	}
	return stripManagedFields(obj)
}

func thinContainers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	thin := make([]corev1.Container, len(cs))
	for i, c := range cs {
		thin[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	return thin
}

// patchOp is one operation of a JSON patch.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"` // ignored by "remove"
}

// shadowPatch is the JSON patch that brings the mutable parts of want (labels, annotations,
// container images, activeDeadlineSeconds) onto the ShadowPod have (as cached: thin is
// enough); nil when nothing differs. It carries have's resourceVersion, so that the API server
// refuses it with a Conflict, as it would a PUT, when have is stale.
func shadowPatch(have, want *offv1beta1.ShadowPod) ([]byte, error) {
	var ops []patchOp
	if !maps.Equal(have.Labels, want.Labels) {
		ops = append(ops, setOrRemove("/metadata/labels", want.Labels, len(want.Labels) > 0))
	}
	if !maps.Equal(have.Annotations, want.Annotations) {
		ops = append(ops, setOrRemove("/metadata/annotations", want.Annotations, len(want.Annotations) > 0))
	}
	ops = append(ops, imageOps("/spec/pod/containers", have.Spec.Pod.Containers, want.Spec.Pod.Containers)...)
	ops = append(ops, imageOps("/spec/pod/initContainers", have.Spec.Pod.InitContainers, want.Spec.Pod.InitContainers)...)
	if h, w := have.Spec.Pod.ActiveDeadlineSeconds, want.Spec.Pod.ActiveDeadlineSeconds; !equality.Semantic.DeepEqual(h, w) {
		ops = append(ops, setOrRemove("/spec/pod/activeDeadlineSeconds", w, w != nil))
	}
	if len(ops) == 0 {
		return nil, nil
	}
	ops = append([]patchOp{{Op: "replace", Path: "/metadata/resourceVersion", Value: have.ResourceVersion}}, ops...)
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the patch of ShadowPod %s/%s: %w", have.Namespace, have.Name, err)
	}
	return data, nil
}

// setOrRemove sets path to value when set, or else removes it (the caller compared: it is there).
func setOrRemove(path string, value any, set bool) patchOp {
	if set {
		return patchOp{Op: "add", Path: path, Value: value} // "add" replaces a member that is there
	}
	return patchOp{Op: "remove", Path: path}
}

// imageOps replaces the image of each container of have whose namesake in want has another.
func imageOps(path string, have, want []corev1.Container) []patchOp {
	var ops []patchOp
	for i, h := range have {
		for _, w := range want {
			if w.Name == h.Name && w.Image != h.Image {
				ops = append(ops, patchOp{Op: "replace", Path: fmt.Sprintf("%s/%d/image", path, i), Value: w.Image})
			}
		}
	}
	return ops
}
