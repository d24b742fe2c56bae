package pods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// patchedPod is a local pod bound to a virtual node, with what placed it there.
func patchedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo",
			Labels:      map[string]string{"app": "web", "example.com/local-only": "x"},
			Annotations: map[string]string{"example.com/local-note": "x", "example.com/kept": "y"}},
		Spec: corev1.PodSpec{
			NodeName:     "cl-provider",
			NodeSelector: map[string]string{"liqo.io/type": "virtual-node"},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "liqo.io/type", Operator: corev1.NodeSelectorOpIn, Values: []string{"virtual-node"}}}}}}}},
			Tolerations: []corev1.Toleration{
				{Key: vnode.Taint.Key, Operator: corev1.TolerationOpExists},
				{Key: "example.com/own", Operator: corev1.TolerationOpExists},
			},
			Containers: []corev1.Container{{Name: "c", Image: "nginx"}},
		},
	}
}

// patch is an offloading patch with every field upstream's virtual kubelet applies to pods.
func patch() *offv1beta1.OffloadingPatch {
	return &offv1beta1.OffloadingPatch{
		LabelsNotReflected:      []string{"example.com/local-only"},
		AnnotationsNotReflected: []string{"example.com/local-note"},
		NodeSelector:            map[string]string{"node-role.example.com/offload": "true"},
		Tolerations:             []corev1.Toleration{{Key: "example.com/offload", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Affinity: &offv1beta1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 10, Preference: corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}},
		RuntimeClassName: ptr.To("gvisor"),
	}
}

// TestShadowForAppliesOffloadingPatch: the ShadowPod of a pod offloaded through a virtual node
// with an offloading patch carries the patch's node selector, tolerations (after the pod's own),
// node affinity and runtime class, and not the labels and annotations the patch does not
// reflect; the reflection labels stay. Without a patch the ShadowPod is as before.
func TestShadowForAppliesOffloadingPatch(t *testing.T) {
	refl := reflectionLabels("cl-consumer", "cl-provider", "liqo-cl-provider")
	p := patch()
	sp := shadowFor(patchedPod(), "demo-remote", refl, p)
	s := sp.Spec.Pod

	if want := map[string]string{"node-role.example.com/offload": "true"}; !equality.Semantic.DeepEqual(s.NodeSelector, want) {
		t.Errorf("nodeSelector %v, want %v (the local one, which placed the pod on the virtual node, dropped)", s.NodeSelector, want)
	}
	wantTol := []corev1.Toleration{{Key: "example.com/own", Operator: corev1.TolerationOpExists}, p.Tolerations[0]}
	if !equality.Semantic.DeepEqual(s.Tolerations, wantTol) {
		t.Errorf("tolerations %v, want %v", s.Tolerations, wantTol)
	}
	if s.Affinity == nil || !equality.Semantic.DeepEqual(s.Affinity.NodeAffinity, p.Affinity.NodeAffinity) || s.Affinity.PodAntiAffinity != nil {
		t.Errorf("affinity %+v, want the patch's node affinity only", s.Affinity)
	}
	if s.RuntimeClassName == nil || *s.RuntimeClassName != "gvisor" {
		t.Errorf("runtimeClassName %v, want gvisor", s.RuntimeClassName)
	}
	if _, ok := sp.Labels["example.com/local-only"]; ok || sp.Labels["app"] != "web" {
		t.Errorf("labels %v, want app=web and no example.com/local-only", sp.Labels)
	}
	for k, v := range refl {
		if sp.Labels[k] != v {
			t.Errorf("reflection label %s=%q, want %q", k, sp.Labels[k], v)
		}
	}
	if want := map[string]string{"example.com/kept": "y"}; !equality.Semantic.DeepEqual(sp.Annotations, want) {
		t.Errorf("annotations %v, want %v", sp.Annotations, want)
	}

	// The patch is copied, not shared: changing the ShadowPod leaves the patch alone.
	s.Tolerations[1].Key = "changed"
	s.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight = 1
	if !equality.Semantic.DeepEqual(p, patch()) {
		t.Errorf("forging changed the patch: %+v", p)
	}

	// Updates of an existing ShadowPod filter labels and annotations the same way.
	local := patchedPod()
	local.Labels["example.com/local-only"] = "changed"
	local.Annotations["example.com/kept"] = "changed"
	sp.ResourceVersion = "7"
	ops := decodePatch(t, sp, shadowFor(local, "demo-remote", refl, patch()))
	if len(ops) != 2 || ops[0].Path != "/metadata/resourceVersion" || ops[0].Value != "7" ||
		ops[1].Op != "add" || ops[1].Path != "/metadata/annotations" || ops[1].Value.(map[string]any)["example.com/kept"] != "changed" {
		t.Fatalf("update %+v, want the resourceVersion and the changed annotation alone", ops)
	}

	// A pod naming its own runtime class keeps it; upstream's consumer-side "liqo" class gives
	// way to the patch's.
	own := patchedPod()
	own.Spec.RuntimeClassName = ptr.To("kata")
	if rc := shadowFor(own, "demo-remote", refl, p).Spec.Pod.RuntimeClassName; rc == nil || *rc != "kata" {
		t.Errorf("runtimeClassName %v, want the pod's own kata", rc)
	}
	own.Spec.RuntimeClassName = ptr.To(liqoRuntimeClass)
	if rc := shadowFor(own, "demo-remote", refl, p).Spec.Pod.RuntimeClassName; rc == nil || *rc != "gvisor" {
		t.Errorf("runtimeClassName %v, want the patch's gvisor over liqo", rc)
	}

	// No patch, or an empty one: the ShadowPod of before.
	plain := shadowFor(patchedPod(), "demo-remote", refl, nil)
	if plain.Spec.Pod.NodeSelector != nil || plain.Spec.Pod.Affinity != nil || plain.Spec.Pod.RuntimeClassName != nil ||
		len(plain.Spec.Pod.Tolerations) != 1 || plain.Labels["example.com/local-only"] != "x" || plain.Annotations["example.com/local-note"] != "x" {
		t.Errorf("without a patch: spec %+v, labels %v, annotations %v", plain.Spec.Pod, plain.Labels, plain.Annotations)
	}
	if empty := shadowFor(patchedPod(), "demo-remote", refl, &offv1beta1.OffloadingPatch{}); !equality.Semantic.DeepEqual(empty, plain) {
		t.Errorf("an empty patch changed the ShadowPod:\ngot  %+v\nwant %+v", empty, plain)
	}
}
