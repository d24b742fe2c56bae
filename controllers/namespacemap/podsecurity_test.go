package namespacemap_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/namespacemap"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestRemoteNamespacePodSecurity: a consumer's remote namespaces are created with Pod Security's
// labels at the provider's default (here restricted), so the API server itself refuses a pod
// the level refuses; the Tenant's annotation changes the level of every existing remote
// namespace of that consumer, and not another's; a label changed by hand is put back; an
// annotation that is no level leaves the default, with a Warning Event on the Tenant; the
// consumer's own identity may not change its namespaces' labels.
func TestRemoteNamespacePodSecurity(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider"})
	prov := env.Cluster("provider")
	ctx := t.Context()
	if _, err := clusteridentity.Ensure(ctx, prov.Client, clusteridentity.Config{ClusterID: "cl-provider"}); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		return (&namespacemap.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("namespacemap"),
			PodSecurity: podsecurity.Policy{Default: api.LevelRestricted}}).SetupWithManager(mgr)
	})
	const tenantA, tenantB = "liqo-tenant-cl-a", "liqo-tenant-cl-b"
	tenantOfA := activeTenant(tenantA, "cl-a")
	for _, o := range []client.Object{tenantNamespace(tenantA, "cl-a"), tenantNamespace(tenantB, "cl-b"), tenantOfA, activeTenant(tenantB, "cl-b"),
		replicated(tenantA, "cl-a", map[string]string{"one": "one-cl-a", "two": "two-cl-a"}),
		replicated(tenantB, "cl-b", map[string]string{"one": "one-cl-b"})} {
		if err := prov.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	levelIs := func(level string, namespaces ...string) func(context.Context) bool {
		return func(ctx context.Context) bool {
			for _, name := range namespaces {
				ns := &corev1.Namespace{}
				if prov.Client.Get(ctx, client.ObjectKey{Name: name}, ns) != nil {
					return false
				}
				for k, v := range podsecurity.Labels(api.Level(level)) {
					if ns.Labels[k] != v {
						return false
					}
				}
			}
			return true
		}
	}
	testenv.Eventually(t, "the remote namespaces at the default, restricted", 30*time.Second, levelIs("restricted", "one-cl-a", "two-cl-a", "one-cl-b"))
	root := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "one-cl-a", Name: "root"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}}
	if err := prov.Client.Create(ctx, root, client.DryRunAll); err == nil || !apierrors.IsForbidden(err) {
		t.Errorf("a privileged pod created directly in a restricted remote namespace: %v, want refused by the API server's Pod Security", err)
	}

	setLevel := func(level string) {
		t.Helper()
		patch := `{"metadata":{"annotations":{"` + consts.TenantPodSecurityAnnotation + `":"` + level + `"}}}`
		if err := prov.Client.Patch(ctx, tenantOfA, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	setLevel("privileged")
	testenv.Eventually(t, "cl-a's remote namespaces privileged", 30*time.Second, levelIs("privileged", "one-cl-a", "two-cl-a"))
	if !levelIs("restricted", "one-cl-b")(ctx) {
		t.Error("cl-b's remote namespace changed with cl-a's level")
	}
	if err := prov.Client.Create(ctx, root, client.DryRunAll); err != nil {
		t.Errorf("a privileged pod in a remote namespace of a consumer granted privileged: %v", err)
	}

	// By hand: put back.
	if err := prov.Client.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "two-cl-a"}}, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+consts.PodSecurityEnforceLabel+`":"baseline","`+consts.PodSecurityEnforceVersionLabel+`":null}}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the labels changed by hand put back", 30*time.Second, levelIs("privileged", "two-cl-a"))

	// Not a level: the default, and a Warning on the Tenant.
	setLevel("everything")
	testenv.Eventually(t, "the default back", 30*time.Second, levelIs("restricted", "one-cl-a", "two-cl-a"))
	expectEvent(t, prov.Client, tenantOfA, "InvalidPodSecurity")

	// The consumer cannot relabel its namespaces.
	err := prov.UserClient(t, "cl-a").Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "one-cl-a"}}, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+consts.PodSecurityEnforceLabel+`":"privileged"}}}`)))
	if !apierrors.IsForbidden(err) {
		t.Errorf("the consumer relabelling its remote namespace: %v, want Forbidden", err)
	}
}
