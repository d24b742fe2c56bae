package tethering_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/tethering"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	rules "github.com/peerkit/terraform-provider-liqo/internal/tethering"
)

const foreignID = "cl-foreign"

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func tenant(ns, id string) *authv1beta1.Tenant {
	return &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id},
		Spec: authv1beta1.TenantSpec{ClusterID: corev1beta1.ClusterID(id), TenantCondition: authv1beta1.TenantConditionActive}}
}

// offloadingOf returns the NamespaceOffloading of namespace ns, nil when there is none.
func offloadingOf(ctx context.Context, c client.Reader, ns string) (*offv1beta1.NamespaceOffloading, error) {
	nsoff := &offv1beta1.NamespaceOffloading{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: consts.NamespaceOffloadingName}, nsoff)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return nsoff, err
}

// tetheredIn waits until namespace ns has the tethered NamespaceOffloading to foreignID.
func tetheredIn(t *testing.T, c client.Reader, ns string) {
	t.Helper()
	want := &offv1beta1.NamespaceOffloading{}
	forge.MutateTetheredOffloading(want, foreignID)
	testenv.Poll(t, "the tethered NamespaceOffloading of "+ns, 30*time.Second, func(ctx context.Context) (bool, error) {
		got, err := offloadingOf(ctx, c, ns)
		return got != nil && rules.IsManaged(got) && equality.Semantic.DeepEqual(got.Spec, want.Spec), err
	})
}

// noneIn checks that namespace ns has no NamespaceOffloading.
func noneIn(t *testing.T, c client.Reader, ns string) {
	t.Helper()
	if got, err := offloadingOf(t.Context(), c, ns); err != nil || got != nil {
		t.Errorf("namespace %s: NamespaceOffloading %v (err %v), want none", ns, got, err)
	}
}

// TestTethering: the TetheringConfigMap makes the tethered NamespaceOffloadings in the
// namespaces a tethered cluster offloads only (not Kubernetes', Liqo's, a tenant namespace or
// a consumer's remote namespace), in a namespace created later too, keeps their spec, deletes
// them from namespaces no longer eligible, and leaves the user's own alone (an Event says
// so); its deletion removes them and leaves the user's; with a Tenant of another consumer, the tethering is refused: nothing made, a
// Warning Event on the ConfigMap.
func TestTethering(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "home"})
	c := env.Cluster("home").Client
	ctx := t.Context()

	user := &offv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: "mine", Name: consts.NamespaceOffloadingName},
		Spec: offv1beta1.NamespaceOffloadingSpec{PodOffloadingStrategy: offv1beta1.LocalPodOffloadingStrategyType,
			NamespaceMappingStrategy: offv1beta1.EnforceSameNameMappingStrategyType}}
	for _, o := range []client.Object{
		namespace(consts.LiqoNamespace, nil), namespace("app", nil), namespace("mine", nil),
		namespace("liqo-tenant-cl-foreign", map[string]string{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: foreignID}),
		namespace("tenants-elsewhere", map[string]string{consts.TenantNamespaceLabel: "true"}),
		namespace("work-cl-foreign", map[string]string{consts.RemoteNamespaceLabel: "true"}),
		tenant("liqo-tenant-cl-foreign", foreignID), user,
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	testenv.StartManager(t, env.Cluster("home"), func(mgr ctrl.Manager) error {
		return (&tethering.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("tethering")}).SetupWithManager(mgr)
	})

	cm := rules.ConfigMap("", foreignID)
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	tetheredIn(t, c, "app")
	tetheredIn(t, c, "default")
	t.Logf("tethered in %v", time.Since(began))
	for _, ns := range []string{"kube-system", "kube-public", "kube-node-lease", consts.LiqoNamespace, "liqo-tenant-cl-foreign", "tenants-elsewhere", "work-cl-foreign"} {
		noneIn(t, c, ns)
	}
	testenv.ExpectEvent(t, c, namespace("mine", nil), tethering.ReasonUserOffloading, 30*time.Second)
	if got, err := offloadingOf(ctx, c, "mine"); err != nil || got == nil || rules.IsManaged(got) ||
		got.Spec.PodOffloadingStrategy != offv1beta1.LocalPodOffloadingStrategyType || got.Spec.ClusterSelector != nil {
		t.Errorf("the user's NamespaceOffloading: %+v (err %v), want it untouched", got, err)
	}

	// A namespace created later; a managed spec changed by hand comes back.
	if err := c.Create(ctx, namespace("later", nil)); err != nil {
		t.Fatal(err)
	}
	tetheredIn(t, c, "later")
	got, err := offloadingOf(ctx, c, "app")
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.PodOffloadingStrategy = offv1beta1.LocalAndRemotePodOffloadingStrategyType
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	tetheredIn(t, c, "app")

	// A namespace no longer eligible (now a consumer's remote namespace) loses its managed one.
	later := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: "later"}, later); err != nil {
		t.Fatal(err)
	}
	later.Labels[consts.RemoteNamespaceLabel] = "true"
	if err := c.Update(ctx, later); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the NamespaceOffloading of a no longer eligible namespace gone", 30*time.Second, func(ctx context.Context) (bool, error) {
		got, err := offloadingOf(ctx, c, "later")
		return got == nil && err == nil, err
	})

	// The tethering ends: the managed ones go, the user's stays.
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the managed NamespaceOffloadings gone", 30*time.Second, func(ctx context.Context) (bool, error) {
		list := &offv1beta1.NamespaceOffloadingList{}
		err := c.List(ctx, list)
		return err == nil && len(list.Items) == 1 && list.Items[0].Namespace == "mine", err
	})

	refused(t, c)
}

// refused: with a Tenant of another consumer, the tethering is refused: a Warning Event on the
// ConfigMap, and no NamespaceOffloading made.
func refused(t *testing.T, c client.Client) {
	t.Helper()
	ctx := t.Context()
	for _, o := range []client.Object{
		namespace("liqo-tenant-cl-other", map[string]string{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: "cl-other"}),
		tenant("liqo-tenant-cl-other", "cl-other"),
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cm := rules.ConfigMap("", foreignID)
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	ev := testenv.ExpectEvent(t, c, cm, tethering.ReasonRefused, 30*time.Second)
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("refusal Event of type %s, want Warning: %s", ev.Type, ev.Note)
	}
	t.Logf("refused: %s", ev.Note)
	time.Sleep(2 * time.Second) // what a wrongly tethering controller would have made by now
	for _, ns := range []string{"app", "default", "later"} {
		noneIn(t, c, ns)
	}
}
