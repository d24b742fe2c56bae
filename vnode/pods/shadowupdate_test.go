package pods

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
)

// decodePatch is shadowPatch(have, want) decoded; nil when there is no patch.
func decodePatch(t *testing.T, have, want *offv1beta1.ShadowPod) []patchOp {
	t.Helper()
	data, err := shadowPatch(have, want)
	if err != nil {
		t.Fatal(err)
	}
	if data == nil {
		return nil
	}
	var ops []patchOp
	if err := json.Unmarshal(data, &ops); err != nil {
		t.Fatal(err)
	}
	return ops
}

// TestShadowPatch: the patch computed from a thin cached ShadowPod, applied to the full
// ShadowPod on the server, changes the mutable parts (an init container's and a second
// container's images by index, activeDeadlineSeconds removed, annotations removed, a label
// added) and keeps the rest of the spec; the same ShadowPod again gives no patch.
func TestShadowPatch(t *testing.T) {
	server := &offv1beta1.ShadowPod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "r", Name: "web", ResourceVersion: "42",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: offv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{
			InitContainers:        []corev1.Container{{Name: "init", Image: "busybox:1", Command: []string{"true"}}},
			Containers:            []corev1.Container{{Name: "web", Image: "nginx:1", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}, {Name: "side", Image: "envoy:1"}},
			Volumes:               []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			ActiveDeadlineSeconds: ptr.To[int64](60), ServiceAccountName: "worker", Hostname: "web-0",
		}},
	}
	cached, err := thinShadow(server.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	have := cached.(*offv1beta1.ShadowPod)
	if s := have.Spec.Pod; len(s.Volumes) != 0 || s.Hostname != "" || len(s.Containers[0].Ports) != 0 || s.InitContainers[0].Command != nil ||
		s.ServiceAccountName != "worker" || *s.ActiveDeadlineSeconds != 60 || s.Containers[1].Image != "envoy:1" || have.ManagedFields != nil {
		t.Fatalf("thin cached ShadowPod: %+v", have)
	}

	want := server.DeepCopy()
	want.Labels = map[string]string{"app": "web", "tier": "front"}
	want.Annotations = nil
	want.Spec.Pod.Containers[1].Image = "envoy:2"
	want.Spec.Pod.InitContainers[0].Image = "busybox:2"
	want.Spec.Pod.ActiveDeadlineSeconds = nil
	data, err := shadowPatch(have, want)
	if err != nil || data == nil {
		t.Fatalf("shadowPatch: %s, %v", data, err)
	}
	doc, err := json.Marshal(server)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(data)
	if err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	if doc, err = p.Apply(doc); err != nil {
		t.Fatalf("applying %s: %v", data, err)
	}
	got := &offv1beta1.ShadowPod{}
	if err := json.Unmarshal(doc, got); err != nil {
		t.Fatal(err)
	}
	want.ManagedFields = server.ManagedFields
	if got.ResourceVersion != "42" || !jsonEqual(t, got, want) {
		t.Errorf("patched ShadowPod:\n%s\nwant\n%s", doc, mustJSON(t, want))
	}

	if ops := decodePatch(t, have, server); ops != nil {
		t.Errorf("no change, patch %+v", ops)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	return string(mustJSON(t, a)) == string(mustJSON(t, b))
}
