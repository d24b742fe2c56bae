package namespacemap_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/namespacemap"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

func tenantNamespace(name, consumer string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}}}
}

// replicated is a NamespaceMap as the replication controller of consumer writes it.
func replicated(namespace, consumer string, desired map[string]string) *offv1beta1.NamespaceMap {
	return &offv1beta1.NamespaceMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "cl-provider",
		Labels:      map[string]string{consts.ReplicationOriginLabel: consumer, consts.RemoteClusterIDLabel: consumer},
		Annotations: map[string]string{consts.ReplicationOriginNamespaceAnnotation: "liqo-tenant-cl-provider"}},
		Spec: offv1beta1.NamespaceMapSpec{DesiredMapping: desired}}
}

// activeTenant is a consumer's Tenant as the provider's peering leaves it.
func activeTenant(namespace, consumer string) *authv1beta1.Tenant {
	return &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: consumer},
		Spec: authv1beta1.TenantSpec{ClusterID: corev1beta1.ClusterID(consumer), TenantCondition: authv1beta1.TenantConditionActive}}
}

// expectEvent waits for an Event with reason on obj.
func expectEvent(t *testing.T, c client.Client, obj client.Object, reason string) {
	t.Helper()
	testenv.ExpectEvent(t, c, obj, reason, 30*time.Second)
}

// TestNamespaceMap runs the provider's controller on replicated maps: remote namespaces are
// created with the consumer's binding (repaired if deleted) and reported Accepted; a renamed
// mapping replaces its namespace; an invalid name is reported with an Event; a map claiming
// another consumer, or a consumer's local original, does nothing; a consumer without a Tenant
// is bound nowhere and gets no new namespace (its identity is forbidden in its remote
// namespaces) until it has one again; deleting a map deletes its namespaces before it goes.
func TestNamespaceMap(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider", ControllerManager: true}) // namespaces finish deleting
	prov := env.Cluster("provider")
	ctx := t.Context()
	if _, err := clusteridentity.Ensure(ctx, prov.Client, clusteridentity.Config{ClusterID: "cl-provider"}); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		return (&namespacemap.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("namespacemap")}).SetupWithManager(mgr)
	})

	const tenantA, tenantB = "liqo-tenant-cl-a", "liqo-tenant-cl-b"
	for _, ns := range []*corev1.Namespace{tenantNamespace(tenantA, "cl-a"), tenantNamespace(tenantB, "cl-b")} {
		if err := prov.Client.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	tenantOfA := activeTenant(tenantA, "cl-a")
	if err := prov.Client.Create(ctx, tenantOfA); err != nil {
		t.Fatal(err)
	}
	nm := replicated(tenantA, "cl-a", map[string]string{"demo": "demo-cl-a", "web": "web"})
	if err := prov.Client.Create(ctx, nm); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(nm)
	statusIs := func(want map[string]offv1beta1.RemoteNamespaceStatus) func(context.Context) bool {
		return func(ctx context.Context) bool {
			if prov.Client.Get(ctx, key, nm) != nil || len(nm.Status.CurrentMapping) != len(want) {
				return false
			}
			for k, v := range want {
				if nm.Status.CurrentMapping[k] != v {
					return false
				}
			}
			return true
		}
	}
	accepted := func(remote string) offv1beta1.RemoteNamespaceStatus {
		return offv1beta1.RemoteNamespaceStatus{RemoteNamespace: remote, Phase: offv1beta1.MappingAccepted}
	}
	testenv.Eventually(t, "both namespaces Accepted", 30*time.Second, statusIs(map[string]offv1beta1.RemoteNamespaceStatus{"demo": accepted("demo-cl-a"), "web": accepted("web")}))
	for local, remote := range map[string]string{"demo": "demo-cl-a", "web": "web"} {
		ns := &corev1.Namespace{}
		if err := prov.Client.Get(ctx, client.ObjectKey{Name: remote}, ns); err != nil {
			t.Fatal(err)
		}
		if ns.Labels[consts.RemoteNamespaceLabel] != "true" || ns.Labels[consts.RemoteClusterIDLabel] != "cl-a" || ns.Annotations[consts.OriginNamespaceAnnotation] != local {
			t.Errorf("namespace %s: labels %v annotations %v", remote, ns.Labels, ns.Annotations)
		}
		rb := &rbacv1.RoleBinding{}
		if err := prov.Client.Get(ctx, client.ObjectKey{Namespace: remote, Name: namespacemap.RoleBindingName}, rb); err != nil {
			t.Fatal(err)
		}
		if rb.RoleRef.Name != clusteridentity.RemoteWorkloadClusterRole || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "cl-a" || rb.Subjects[0].Kind != rbacv1.UserKind {
			t.Errorf("binding in %s: %+v %+v", remote, rb.RoleRef, rb.Subjects)
		}
		// Upstream's: its group, for the slice certificates upstream's virtual kubelets use.
		if err := prov.Client.Get(ctx, client.ObjectKey{Namespace: remote, Name: namespacemap.SliceRoleBindingName}, rb); err != nil {
			t.Fatal(err)
		}
		if rb.RoleRef.Name != clusteridentity.SliceWorkloadClusterRole || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "cl-a" || rb.Subjects[0].Kind != rbacv1.GroupKind {
			t.Errorf("group binding in %s: %+v %+v", remote, rb.RoleRef, rb.Subjects)
		}
	}
	if !strings.Contains(strings.Join(nm.Finalizers, ","), namespacemap.Finalizer) {
		t.Errorf("finalizers %v, want %s", nm.Finalizers, namespacemap.Finalizer)
	}

	// A deleted binding comes back.
	if err := prov.Client.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: namespacemap.RoleBindingName}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the binding restored", 30*time.Second, func(ctx context.Context) bool {
		return prov.Client.Get(ctx, client.ObjectKey{Namespace: "web", Name: namespacemap.RoleBindingName}, &rbacv1.RoleBinding{}) == nil
	})

	// A map in cl-b's tenant namespace claiming to be cl-a's, asking for nothing, deletes
	// nothing of cl-a's; a consumer's original (replication label) is not acted on.
	spoof := replicated(tenantB, "cl-a", nil)
	original := replicated(tenantB, "cl-b", map[string]string{"x": "original-x"})
	original.Name = "original"
	original.Labels = map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: "cl-b"}
	for _, o := range []client.Object{spoof, original} {
		if err := prov.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "an Event on the spoofing map", 30*time.Second, func(ctx context.Context) bool {
		evs := &eventsv1.EventList{}
		if prov.Client.List(ctx, evs, client.InNamespace(tenantB)) != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == "WrongTenantNamespace" && e.Regarding.Name == spoof.Name {
				return true
			}
		}
		return false
	})

	// Rename one mapping and add an invalid one.
	if err := prov.Client.Get(ctx, key, nm); err != nil {
		t.Fatal(err)
	}
	nm.Spec.DesiredMapping["web"] = "web-renamed"
	nm.Spec.DesiredMapping["bad"] = "Not_A_Name"
	if err := prov.Client.Update(ctx, nm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the renamed namespace Accepted, the invalid one failed", 30*time.Second, statusIs(map[string]offv1beta1.RemoteNamespaceStatus{
		"demo": accepted("demo-cl-a"), "web": accepted("web-renamed"),
		"bad": {RemoteNamespace: "Not_A_Name", Phase: offv1beta1.MappingCreationLoopBackOff}}))
	testenv.Eventually(t, "the old namespace gone", 30*time.Second, func(ctx context.Context) bool {
		return apierrors.IsNotFound(prov.Client.Get(ctx, client.ObjectKey{Name: "web"}, &corev1.Namespace{}))
	})
	evs := &eventsv1.EventList{}
	if err := prov.Client.List(ctx, evs, client.InNamespace(tenantA)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		found = found || (e.Reason == "NamespaceCreationFailed" && strings.Contains(e.Note, "Not_A_Name"))
	}
	if !found {
		t.Errorf("no NamespaceCreationFailed Event naming Not_A_Name in %s", tenantA)
	}
	for _, name := range []string{"demo-cl-a", "original-x"} {
		err := prov.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
		if name == "demo-cl-a" && err != nil {
			t.Errorf("cl-a's namespace deleted by another tenant's map: %v", err)
		}
		if name == "original-x" && !apierrors.IsNotFound(err) {
			t.Errorf("namespace created for a consumer's original map: %v", err)
		}
	}

	// cl-a's Tenant goes: its bindings go, and its identity can no longer work in its remote
	// namespace, which stays; the bindings come back with a Tenant.
	kc, err := prov.UserKubeconfig("cl-a")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := client.New(cfg, client.Options{Scheme: prov.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	shadowPod := func() error {
		return peer.Create(ctx, &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo-cl-a", GenerateName: "sp-"},
			Spec: offv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}})
	}
	getConfigMap := func() error {
		return peer.Get(ctx, client.ObjectKey{Namespace: "demo-cl-a", Name: "cm"}, &corev1.ConfigMap{})
	}
	if err := shadowPod(); err != nil {
		t.Errorf("cl-a creating a ShadowPod in its remote namespace: %v", err)
	}
	if err := prov.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo-cl-a", Name: "cm"}}); err != nil {
		t.Fatal(err)
	}
	if err := getConfigMap(); err != nil {
		t.Errorf("cl-a reading a ConfigMap in its remote namespace: %v", err)
	}
	if err := prov.Client.Delete(ctx, tenantOfA); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "cl-a's bindings gone, its mappings no longer reported", 30*time.Second, func(ctx context.Context) bool {
		bindings := &rbacv1.RoleBindingList{}
		return prov.Client.List(ctx, bindings, client.MatchingLabels{consts.RemoteClusterIDLabel: "cl-a"}) == nil && len(bindings.Items) == 0 &&
			statusIs(nil)(ctx)
	})
	if err := shadowPod(); !apierrors.IsForbidden(err) {
		t.Errorf("cl-a, without a Tenant, creating a ShadowPod in its remote namespace: %v, want Forbidden", err)
	}
	if err := getConfigMap(); !apierrors.IsForbidden(err) {
		t.Errorf("cl-a, without a Tenant, reading a ConfigMap in its remote namespace: %v, want Forbidden", err)
	}
	if err := prov.Client.Get(ctx, client.ObjectKey{Name: "demo-cl-a"}, &corev1.Namespace{}); err != nil {
		t.Errorf("cl-a's remote namespace after its Tenant went: %v", err)
	}
	// Nothing brings a binding back while there is no Tenant: not a change of the map, not a
	// binding deleted by hand (both reconcile the map).
	if err := prov.Client.Get(ctx, key, nm); err != nil {
		t.Fatal(err)
	}
	nm.Spec.DesiredMapping["new"] = "new-cl-a"
	if err := prov.Client.Update(ctx, nm); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, prov.Client, nm, "NoTenant")
	time.Sleep(time.Second)
	for _, name := range []string{namespacemap.RoleBindingName, namespacemap.SliceRoleBindingName} {
		if err := prov.Client.Get(ctx, client.ObjectKey{Namespace: "demo-cl-a", Name: name}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
			t.Errorf("binding %s in demo-cl-a without a Tenant: %v, want NotFound", name, err)
		}
	}
	if err := prov.Client.Get(ctx, client.ObjectKey{Name: "new-cl-a"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace new-cl-a created without a Tenant: %v, want NotFound", err)
	}
	if err := shadowPod(); !apierrors.IsForbidden(err) {
		t.Errorf("cl-a, without a Tenant, creating a ShadowPod a second later: %v, want Forbidden", err)
	}
	tenantOfA = activeTenant(tenantA, "cl-a")
	if err := prov.Client.Create(ctx, tenantOfA); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "cl-a's mappings Accepted again with a Tenant", 30*time.Second, statusIs(map[string]offv1beta1.RemoteNamespaceStatus{
		"demo": accepted("demo-cl-a"), "web": accepted("web-renamed"), "new": accepted("new-cl-a"),
		"bad": {RemoteNamespace: "Not_A_Name", Phase: offv1beta1.MappingCreationLoopBackOff}}))
	testenv.Eventually(t, "cl-a working in its remote namespace again", 30*time.Second, func(context.Context) bool { return shadowPod() == nil && getConfigMap() == nil })

	// Deleting the map deletes its namespaces, then the map.
	if err := prov.Client.Delete(ctx, nm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the namespaces, then the map, gone", 30*time.Second, func(ctx context.Context) bool {
		left := &corev1.NamespaceList{}
		return prov.Client.List(ctx, left, client.MatchingLabels{consts.RemoteClusterIDLabel: "cl-a", consts.RemoteNamespaceLabel: "true"}) == nil &&
			len(left.Items) == 0 && apierrors.IsNotFound(prov.Client.Get(ctx, key, &offv1beta1.NamespaceMap{}))
	})
}
