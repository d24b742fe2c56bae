package shadowpod_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/shadowpod"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestShadowPodBecomesOwnedPod: on a provider without garbage collection (no controller
// manager), a ShadowPod becomes a Running pod it controls, with its labels; the pod is
// re-created when deleted; label and image changes reach it; its phase comes back to the
// ShadowPod; deleting the ShadowPod deletes the pod; host namespaces are refused; a pod may
// use only Secrets its consumer reflected, and waits for one that is not there yet.
func TestShadowPodBecomesOwnedPod(t *testing.T) {
	c := provider.Env(t).Cluster("provider")
	ctx := t.Context()

	testenv.StartManager(t, c, func(mgr ctrl.Manager) error {
		return (&shadowpod.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("liqo-shadowpod")}).SetupWithManager(mgr)
	})

	const ns = "remote"
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sp := &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"app": "web"},
		Annotations: map[string]string{"note": "a"}},
		Spec: offv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{NodeName: "not-a-node", Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}},
			// Without a controller manager, nothing lifts the not-ready taint new nodes get.
			Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}}}}}
	if err := c.Client.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	key := client.ObjectKeyFromObject(sp)
	testenv.Eventually(t, "a Running pod and the ShadowPod's phase Running", 30*time.Second, func(ctx context.Context) bool {
		return c.Client.Get(ctx, key, pod) == nil && pod.Status.Phase == corev1.PodRunning &&
			c.Client.Get(ctx, key, sp) == nil && sp.Status.Phase == corev1.PodRunning
	})
	if !metav1.IsControlledBy(pod, sp) || pod.Labels["app"] != "web" || pod.Annotations["note"] != "a" || pod.Spec.NodeName != "node-1" {
		t.Errorf("pod: owners %v labels %v annotations %v node %q; want controlled by the ShadowPod, its labels, scheduled on node-1",
			pod.OwnerReferences, pod.Labels, pod.Annotations, pod.Spec.NodeName)
	}

	oldUID := pod.UID
	if err := c.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the pod re-created", 30*time.Second, func(ctx context.Context) bool {
		return c.Client.Get(ctx, key, pod) == nil && pod.UID != oldUID && pod.Status.Phase == corev1.PodRunning
	})

	if err := c.Client.Patch(ctx, sp, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"tier":"front"},"annotations":{"note":null}},"spec":{"pod":{"containers":[{"name":"c","image":"nginx:2"}]}}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the label, annotation and image on the pod", 30*time.Second, func(ctx context.Context) bool {
		_, hasNote := pod.Annotations["note"]
		return c.Client.Get(ctx, key, pod) == nil && pod.Labels["tier"] == "front" && !hasNote && pod.Spec.Containers[0].Image == "nginx:2"
	})

	if err := c.Client.Delete(ctx, sp); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the pod gone with its ShadowPod (no garbage collector runs here)", 30*time.Second, func(ctx context.Context) bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, key, &corev1.Pod{}))
	})

	host := &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "host"},
		Spec: offv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}}}}}
	if err := c.Client.Create(ctx, host); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the host-network ShadowPod Failed", 30*time.Second, func(ctx context.Context) bool {
		return c.Client.Get(ctx, client.ObjectKeyFromObject(host), host) == nil && host.Status.Phase == corev1.PodFailed
	})
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(host), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod of the host-network ShadowPod: %v, want not found", err)
	}

	// Secrets: only the consumer's own reflected copies. A consumer may write Secrets in its
	// remote namespaces but not read them; a pod mounting another Secret would read it for it.
	copyOf := func(origin string) map[string]string {
		return map[string]string{consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: origin}
	}
	for _, sec := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "providers-own"}, StringData: map[string]string{"k": "v"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "others-copy", Labels: copyOf("cl-other")}, StringData: map[string]string{"k": "v"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-copy", Labels: copyOf("cl-consumer")}, StringData: map[string]string{"k": "v"}},
		// Upstream Liqo's virtual kubelet labels its copies its own way.
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-upstream-copy", Labels: map[string]string{consts.UpstreamOriginLabel: "cl-consumer"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "others-upstream-copy", Labels: map[string]string{consts.UpstreamOriginLabel: "cl-other"}}},
	} {
		if err := c.Client.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	shadowUsing := func(name string, spec corev1.PodSpec) *offv1beta1.ShadowPod {
		spec.Containers = append(spec.Containers, corev1.Container{Name: "c", Image: "nginx:1"})
		spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}}
		return &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{consts.OriginClusterIDLabel: "cl-consumer", consts.ReflectedLabel: "true"}},
			Spec: offv1beta1.ShadowPodSpec{Pod: spec}}
	}
	volume := func(secret string) corev1.PodSpec {
		return corev1.PodSpec{Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}}}
	}
	envRef := corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i", Image: "busybox", Env: []corev1.EnvVar{{Name: "K",
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "others-copy"}, Key: "k"}}}}}}}
	pull := corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "providers-own"}}}
	// A ShadowPod of upstream's virtual kubelet: its labels, its Secrets.
	upstream := func(name, secret string) *offv1beta1.ShadowPod {
		s := shadowUsing(name, volume(secret))
		s.Labels = map[string]string{consts.UpstreamOriginLabel: "cl-consumer", consts.UpstreamDestinationLabel: "cl-provider"}
		return s
	}
	refused := []*offv1beta1.ShadowPod{shadowUsing("mounts-providers", volume("providers-own")), shadowUsing("env-others", envRef),
		shadowUsing("pulls-providers", pull), upstream("upstream-mounts-others", "others-upstream-copy")}
	own, later := shadowUsing("mounts-own", volume("own-copy")), shadowUsing("mounts-later", volume("not-yet"))
	upstreamOwn := upstream("upstream-mounts-own", "own-upstream-copy")
	for _, s := range append(refused, own, later, upstreamOwn) {
		if err := c.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the pod of the ShadowPod mounting its own Secret copy", 30*time.Second, func(ctx context.Context) bool {
		return c.Client.Get(ctx, client.ObjectKeyFromObject(own), &corev1.Pod{}) == nil
	})
	testenv.Eventually(t, "the pod of upstream's ShadowPod mounting its own Secret copy", 30*time.Second, func(ctx context.Context) bool {
		return c.Client.Get(ctx, client.ObjectKeyFromObject(upstreamOwn), &corev1.Pod{}) == nil
	})
	for _, s := range refused {
		testenv.Eventually(t, "a SecretNotReflected Warning on "+s.Name, 30*time.Second, func(ctx context.Context) bool {
			evs := &eventsv1.EventList{}
			return c.Client.List(ctx, evs, client.InNamespace(ns)) == nil && slices.ContainsFunc(evs.Items, func(e eventsv1.Event) bool {
				return e.Regarding.Name == s.Name && e.Reason == "SecretNotReflected" && e.Type == corev1.EventTypeWarning
			})
		})
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod of ShadowPod %s, which refers to a Secret not its consumer's: %v, want not found", s.Name, err)
		}
	}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(later), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod of ShadowPod %s before its Secret exists: %v, want not found", later.Name, err)
	}
	if err := c.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-yet", Labels: copyOf("cl-consumer")}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the pod of the ShadowPod whose Secret was reflected later", 30*time.Second, func(ctx context.Context) bool {
		return c.Client.Get(ctx, client.ObjectKeyFromObject(later), &corev1.Pod{}) == nil
	})
}
