package pods_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/peerkit/terraform-provider-liqo/controllers/grantenforcement"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity/podsecuritytest"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode/pods"
)

// TestProviderRefusals: what the consumer's pod shows when the provider's grant webhook
// refuses its ShadowPod. A pod its Pod Security level refuses (the attack) turns Failed
// (OffloadingRefused) with the provider's message naming the fields and the level, and a
// Warning Event; a pod beyond the grant stays Pending, retried, with a Warning Event quoting the
// provider's reason; neither has a ShadowPod. A pod whose ShadowPod the provider accepts but
// does not create the pod of says why in its Ready condition.
func TestProviderRefusals(t *testing.T) {
	b := newBed(t, bedOptions{})
	ctx := t.Context()
	ws := testenv.LocalWebhookServer(t, b.prov)
	testenv.StartManager(t, b.prov, func(mgr ctrl.Manager) error {
		ws.Register(grantenforcement.Path, &grantenforcement.Handler{Client: mgr.GetClient(), Decoder: admission.NewDecoder(mgr.GetScheme()),
			PodSecurity: podsecurity.Policy{}})
		for _, wh := range grantenforcement.Webhooks() {
			ws.AddValidating(grantenforcement.Configuration, grantenforcement.Path, wh)
		}
		return mgr.Add(ws)
	})
	// The consumer's grant on the provider: one CPU.
	tenantOnProvider := "liqo-tenant-" + consumerID
	id := corev1beta1.ClusterID(consumerID)
	slice := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: tenantOnProvider, Name: "granted"},
		Spec: authv1beta1.ResourceSliceSpec{ConsumerClusterID: &id}}
	create(t, b.prov.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantOnProvider,
		Labels: map[string]string{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumerID}}}, slice)
	slice.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("100")}
	slice.Status.Conditions = []authv1beta1.ResourceSliceCondition{{Type: authv1beta1.ResourceSliceConditionTypeResources,
		Status: authv1beta1.ResourceSliceConditionAccepted, LastTransitionTime: metav1.Now()}}
	if err := b.prov.Client.Status().Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the grant webhook in force", 30*time.Second, func(ctx context.Context) bool {
		err := b.prov.Client.Create(ctx, &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNs, Name: "probe"},
			Spec: offv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}}}}, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "granted")
	})

	local := func(name string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: name},
			Spec: corev1.PodSpec{NodeName: nodeName, Tolerations: deployment("x", 1).Spec.Template.Spec.Tolerations,
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		return p
	}
	warned := func(name, want string) {
		t.Helper()
		testenv.Eventually(t, "a Warning Event on "+name+" saying "+want, 30*time.Second, func(ctx context.Context) bool {
			evs := &corev1.EventList{}
			return b.cons.Client.List(ctx, evs, client.InNamespace(localNs)) == nil && slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
				return e.InvolvedObject.Name == name && e.Reason == pods.ReasonRefused && e.Type == corev1.EventTypeWarning &&
					strings.Contains(e.Message, want)
			})
		})
	}
	noShadow := func(name string) {
		t.Helper()
		if err := b.prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: name}, &offv1beta1.ShadowPod{}); !apierrors.IsNotFound(err) {
			t.Errorf("ShadowPod of %s: %v, want none", name, err)
		}
	}

	attack := local("attack")
	podsecuritytest.Attack(&attack.ObjectMeta, &attack.Spec)
	create(t, b.cons.Client, attack)
	testenv.Eventually(t, "the attack's pod Failed", 30*time.Second, func(ctx context.Context) bool {
		return b.cons.Client.Get(ctx, client.ObjectKeyFromObject(attack), attack) == nil && attack.Status.Phase == corev1.PodFailed
	})
	if attack.Status.Reason != pods.ReasonRefused {
		t.Errorf("the attack's pod: reason %q, want %s", attack.Status.Reason, pods.ReasonRefused)
	}
	for _, want := range append([]string{"provider " + providerID + " refused the pod", `Pod Security level "baseline"`, "pod_security"},
		podsecuritytest.AttackWant...) {
		if !strings.Contains(attack.Status.Message, want) {
			t.Errorf("the attack's pod: message %q does not say %q", attack.Status.Message, want)
		}
	}
	warned("attack", "securityContext.privileged=true")
	noShadow("attack")

	big := local("big")
	big.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	create(t, b.cons.Client, big)
	warned("big", "beyond the resources granted to it")
	if err := b.cons.Client.Get(ctx, client.ObjectKeyFromObject(big), big); err != nil || big.Status.Phase == corev1.PodFailed {
		t.Errorf("the pod beyond the grant: %v, phase %s, want it Pending (retried)", err, big.Status.Phase)
	}
	noShadow("big")

	// A ShadowPod whose pod the provider does not create (a pod of that name that it does not
	// own is in the way: its ShadowPod controller warns NameTaken and retries): after
	// notCreatedWait the local pod stays Pending, its Ready condition False with the provider's
	// Warning, which the reflector reads from its watch of the provider's Warning Events.
	create(t, b.prov.Client, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNs, Name: "squatted"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}})
	squatted := local("squatted")
	create(t, b.cons.Client, squatted)
	testenv.Eventually(t, "squatted's pod NotReady with the provider's NameTaken", 60*time.Second, func(ctx context.Context) bool {
		if b.cons.Client.Get(ctx, client.ObjectKeyFromObject(squatted), squatted) != nil {
			return false
		}
		return slices.ContainsFunc(squatted.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && c.Reason == pods.ReasonNotCreated &&
				strings.Contains(c.Message, "(NameTaken)") && strings.Contains(c.Message, "squatted")
		})
	})
	if squatted.Status.Phase != corev1.PodPending {
		t.Errorf("the pod the provider does not create: phase %s, want Pending (the provider retries)", squatted.Status.Phase)
	}
}
