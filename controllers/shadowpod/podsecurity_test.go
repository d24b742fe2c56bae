package shadowpod_test

import (
	"context"
	"slices"
	"strings"
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
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity/podsecuritytest"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestShadowPodPodSecurity: the ShadowPod controller as the second line behind the grant
// webhook (not running here) and before the API server's Pod Security (the remote namespace
// has no Pod Security labels here, so the API server would create any pod): in a consumer's
// remote namespace, at the provider's default (baseline), a ShadowPod breaking each check of
// baseline, and the attack, is Failed with a Warning Event naming the fields and gets
// no pod; a pod within baseline runs. Once the consumer's Tenant is granted privileged, the
// attack's pod is created and runs.
func TestShadowPodPodSecurity(t *testing.T) {
	c := provider.Env(t).Cluster("provider")
	ctx := t.Context()
	var cached client.Reader
	testenv.StartManager(t, c, func(mgr ctrl.Manager) error {
		cached = mgr.GetClient()
		return (&shadowpod.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("liqo-shadowpod"),
			PodSecurity: podsecurity.Policy{}}).SetupWithManager(mgr)
	})

	const consumer, ns, tenantNS = "cl-c", "app-cl-c", "liqo-tenant-cl-c"
	tn := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: consumer}, Spec: authv1beta1.TenantSpec{ClusterID: consumer}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: map[string]string{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{consts.RemoteNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}}},
		tn,
	} {
		if err := c.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	shadow := func(name string, set func(*metav1.ObjectMeta, *corev1.PodSpec)) *offv1beta1.ShadowPod {
		meta, spec := podsecuritytest.Pod()
		if set != nil {
			set(meta, spec)
		}
		// Without a controller manager, nothing lifts the not-ready taint new nodes get.
		spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}}
		sp := &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: meta.Annotations},
			Spec: offv1beta1.ShadowPodSpec{Pod: *spec}}
		if err := c.Client.Create(ctx, sp); err != nil {
			t.Fatalf("creating ShadowPod %s: %v", name, err)
		}
		return sp
	}
	refused := func(sp *offv1beta1.ShadowPod, reason string, want ...string) {
		t.Helper()
		testenv.Eventually(t, sp.Name+" Failed", 30*time.Second, func(ctx context.Context) bool {
			return c.Client.Get(ctx, client.ObjectKeyFromObject(sp), sp) == nil && sp.Status.Phase == corev1.PodFailed
		})
		var msg string
		testenv.Eventually(t, "a "+reason+" Warning on "+sp.Name, 30*time.Second, func(ctx context.Context) bool {
			evs := &eventsv1.EventList{}
			return c.Client.List(ctx, evs, client.InNamespace(ns)) == nil && slices.ContainsFunc(evs.Items, func(e eventsv1.Event) bool {
				msg = e.Note
				return e.Regarding.Name == sp.Name && e.Reason == reason && e.Type == corev1.EventTypeWarning
			})
		})
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: Event %q does not say %q", sp.Name, msg, w)
			}
		}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(sp), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod of the refused ShadowPod %s: %v, want not found", sp.Name, err)
		}
	}
	running := func(sp *offv1beta1.ShadowPod) {
		t.Helper()
		testenv.Eventually(t, "the pod of "+sp.Name+" Running", 30*time.Second, func(ctx context.Context) bool {
			pod := &corev1.Pod{}
			return c.Client.Get(ctx, client.ObjectKeyFromObject(sp), pod) == nil && pod.Status.Phase == corev1.PodRunning
		})
	}

	for _, tc := range podsecuritytest.Baseline() {
		reason := podsecurity.ReasonPodSecurity
		if tc.Check == "hostNamespaces" {
			reason = podsecurity.ReasonHostNamespaces
		}
		refused(shadow(tc.Name, tc.Set), reason, tc.Want)
	}
	refused(shadow("attack", podsecuritytest.Attack), podsecurity.ReasonPodSecurity,
		append([]string{`level "baseline"`, "pod_security"}, podsecuritytest.AttackWant...)...)
	running(shadow("within-baseline", nil))

	// Privileged, granted to this consumer on purpose (liqo_tenant's pod_security).
	if err := c.Client.Patch(ctx, tn, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+consts.TenantPodSecurityAnnotation+`":"privileged"}}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the manager's cache showing the grant", 30*time.Second, func(ctx context.Context) bool {
		seen := &authv1beta1.Tenant{}
		return cached.Get(ctx, client.ObjectKeyFromObject(tn), seen) == nil && seen.Annotations[consts.TenantPodSecurityAnnotation] == "privileged"
	})
	running(shadow("attack-granted", podsecuritytest.Attack))
	refused(shadow("host-network-granted", func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { s.HostNetwork = true }),
		podsecurity.ReasonHostNamespaces, "spec.hostNetwork is true")
}
