package grantenforcement_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity/podsecuritytest"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// tenant creates the consumer's Tenant in its tenant namespace, annotated with a Pod Security
// level unless level is "".
func (p *provider) tenant(consumer, level string) *authv1beta1.Tenant {
	p.t.Helper()
	tn := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + consumer, Name: consumer},
		Spec: authv1beta1.TenantSpec{ClusterID: corev1beta1.ClusterID(consumer)}}
	if level != "" {
		tn.Annotations = map[string]string{consts.TenantPodSecurityAnnotation: level}
	}
	p.create(tn)
	return tn
}

// setLevel sets the Pod Security level of a Tenant ("": the provider's default).
func (p *provider) setLevel(tn *authv1beta1.Tenant, level string) {
	p.t.Helper()
	patch := `{"metadata":{"annotations":{"` + consts.TenantPodSecurityAnnotation + `":null}}}`
	if level != "" {
		patch = `{"metadata":{"annotations":{"` + consts.TenantPodSecurityAnnotation + `":"` + level + `"}}}`
	}
	if err := p.cl.Client.Patch(p.t.Context(), tn, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		p.t.Fatal(err)
	}
}

// podShadow is a ShadowPod of the pod meta and spec.
func podShadow(ns, name string, meta *metav1.ObjectMeta, spec *corev1.PodSpec) *offv1beta1.ShadowPod {
	return &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: meta.Annotations},
		Spec: offv1beta1.ShadowPodSpec{Pod: *spec}}
}

// attack is the ShadowPod: privileged, with the node's / mounted.
func attack(ns, name string) *offv1beta1.ShadowPod {
	meta, spec := podsecuritytest.Pod()
	podsecuritytest.Attack(meta, spec)
	return podShadow(ns, name, meta, spec)
}

// wantRefused checks that err is the Pod Security refusal of an invalid ShadowPod (the
// consumer's virtual kubelet fails its pod on it), saying each of parts.
func wantRefused(t *testing.T, err error, what string, parts ...string) {
	t.Helper()
	if err != nil && !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v, want an Invalid (422) refusal", what, err)
	}
	wantDenied(t, err, what, parts...)
}

// eventuallyAdmitted waits until a dry-run creation of sp by c is admitted (the webhook's cache
// catching up with a changed level).
func eventuallyAdmitted(t *testing.T, c client.Client, what string, sp *offv1beta1.ShadowPod) {
	t.Helper()
	var last error
	testenv.Eventually(t, what, 30*time.Second, func(ctx context.Context) bool {
		last = c.Create(ctx, sp.DeepCopy(), client.DryRunAll)
		return last == nil
	})
}

// eventuallyRefused waits until a dry-run creation of sp by c is refused saying want.
func eventuallyRefused(t *testing.T, c client.Client, what string, sp *offv1beta1.ShadowPod, want string) {
	t.Helper()
	testenv.Eventually(t, what, 30*time.Second, func(ctx context.Context) bool {
		err := c.Create(ctx, sp.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), want)
	})
}

// TestPodSecurityEnforced: with the provider's default (baseline), the consumer's own identity
// is refused (as invalid) a ShadowPod breaking each check of baseline, naming the field, the
// level and how the provider grants more, and the attack (privileged, the node's /
// mounted) naming both; a pod within baseline is admitted; an update of its pod spec that
// breaks baseline is refused, a label update is not. The Tenant's annotation privileged lets
// the attack through (host namespaces stay refused); restricted refuses what restricted
// refuses and admits a restricted pod; an annotation that is no level leaves the default.
func TestPodSecurityEnforced(t *testing.T) {
	p := startProvider(t)
	ctx := t.Context()
	const consumer, ns = "cl-ps", "app-cl-ps"
	p.peer(consumer, rlist("cpu", "10", "memory", "10Gi", "pods", "100"), ns)
	tn := p.tenant(consumer, "")
	p.waitForWebhook(ns)
	c := p.as(consumer)

	for _, tc := range podsecuritytest.Baseline() {
		meta, spec := podsecuritytest.Pod()
		tc.Set(meta, spec)
		parts := []string{"ShadowPod " + ns + "/" + tc.Name + " of cluster " + consumer + " is refused", tc.Want}
		if tc.Check != "hostNamespaces" {
			parts = append(parts, `Pod Security level "baseline"`, "the provider's default", "pod_security", podsecurity.Flag)
		}
		wantRefused(t, c.Create(ctx, podShadow(ns, tc.Name, meta, spec)), tc.Name, parts...)
	}
	wantRefused(t, c.Create(ctx, attack(ns, "attack")), "the attack", podsecuritytest.AttackWant...)

	meta, spec := podsecuritytest.Pod()
	ok := podShadow(ns, "within-baseline", meta, spec)
	if err := c.Create(ctx, ok); err != nil {
		t.Fatalf("a ShadowPod within baseline: %v", err)
	}
	ok.Spec.Pod.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	wantRefused(t, c.Update(ctx, ok), "an update making the pod privileged", `securityContext.privileged=true`)
	if err := c.Get(ctx, client.ObjectKeyFromObject(ok), ok); err != nil {
		t.Fatal(err)
	}
	ok.Labels = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, ok); err != nil {
		t.Errorf("a label update: %v", err)
	}

	// Privileged, granted to this consumer on purpose.
	p.setLevel(tn, "privileged")
	eventuallyAdmitted(t, c, "the attack admitted once privileged is granted", attack(ns, "attack"))
	if err := c.Create(ctx, attack(ns, "attack")); err != nil {
		t.Errorf("the attack with privileged granted: %v", err)
	}
	meta, spec = podsecuritytest.Pod()
	spec.HostNetwork = true
	wantRefused(t, c.Create(ctx, podShadow(ns, "host-network", meta, spec)), "host network with privileged granted", "spec.hostNetwork is true")

	// Restricted.
	p.setLevel(tn, "restricted")
	meta, spec = podsecuritytest.Pod()
	eventuallyRefused(t, c, "restricted in force", podShadow(ns, "baseline-only", meta, spec), `level "restricted"`)
	for _, tc := range podsecuritytest.Restricted() {
		meta, spec := podsecuritytest.RestrictedPod()
		tc.Set(meta, spec)
		wantRefused(t, c.Create(ctx, podShadow(ns, tc.Name, meta, spec)), tc.Name, tc.Want, `Pod Security level "restricted"`,
			"annotation "+consts.TenantPodSecurityAnnotation+" of its Tenant liqo-tenant-"+consumer+"/"+consumer)
	}
	meta, spec = podsecuritytest.RestrictedPod()
	if err := c.Create(ctx, podShadow(ns, "restricted", meta, spec)); err != nil {
		t.Errorf("a restricted ShadowPod at restricted: %v", err)
	}

	// Not a level: the provider's default (baseline) applies.
	p.setLevel(tn, "root")
	meta, spec = podsecuritytest.Pod()
	eventuallyAdmitted(t, c, "baseline back with an annotation that is no level", podShadow(ns, "baseline-again", meta, spec))
	wantRefused(t, c.Create(ctx, attack(ns, "attack-2")), "the attack with an annotation that is no level", `level "baseline"`)
}

// TestPodSecurityProviderDefault: a provider whose default is privileged (the flag) admits the
// issue's attack; a consumer whose Tenant says baseline is still refused it.
func TestPodSecurityProviderDefault(t *testing.T) {
	p := startProviderWith(t, podsecurity.Policy{Default: api.LevelPrivileged})
	ctx := t.Context()
	p.peer("cl-trusted", rlist("cpu", "10", "pods", "10"), "app-cl-trusted")
	p.peer("cl-other", rlist("cpu", "10", "pods", "10"), "app-cl-other")
	p.tenant("cl-trusted", "")
	p.tenant("cl-other", "baseline")
	p.waitForWebhook("app-cl-trusted")
	if err := p.as("cl-trusted").Create(ctx, attack("app-cl-trusted", "attack")); err != nil {
		t.Errorf("the attack with the provider's default privileged: %v", err)
	}
	wantRefused(t, p.as("cl-other").Create(ctx, attack("app-cl-other", "attack")), "the attack of a consumer held to baseline",
		`level "baseline"`, "annotation "+consts.TenantPodSecurityAnnotation)
}
