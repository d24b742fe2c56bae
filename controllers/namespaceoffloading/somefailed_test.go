package namespaceoffloading_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/namespacemap"
	"github.com/peerkit/terraform-provider-liqo/controllers/namespaceoffloading"
	"github.com/peerkit/terraform-provider-liqo/controllers/replication"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// peer sets up, on the consumer cons and the provider prov (whose ID is id), the peering as the
// authentication controllers leave it, a virtual node of the provider in region "eu", and runs
// the provider's NamespaceMap controller.
func peer(t *testing.T, cons, prov *testenv.Cluster, id string) {
	t.Helper()
	kc := providerSide(t, prov, corev1beta1.ClusterID(id))
	tenantNS := "liqo-tenant-" + id
	create(t, cons.Client,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: map[string]string{consts.RemoteClusterIDLabel: id, consts.TenantNamespaceLabel: "true"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "kubeconfig-controlplane",
			Labels:      map[string]string{consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: id},
			Annotations: map[string]string{consts.RemoteTenantNamespaceAnnotation: provNS}},
			Data: map[string][]byte{consts.KubeconfigSecretKey: kc}},
		virtualNode("liqo-"+id, id, "eu"),
	)
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		return (&namespacemap.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("namespacemap")}).SetupWithManager(mgr)
	})
}

// providerSide makes the provider's side of a peering as the authentication controllers leave
// it: its cluster identity, the consumer's tenant namespace, Tenant and control-plane binding.
// It returns the consumer's kubeconfig for the provider.
func providerSide(t *testing.T, prov *testenv.Cluster, id corev1beta1.ClusterID) []byte {
	t.Helper()
	if _, err := clusteridentity.Ensure(t.Context(), prov.Client, clusteridentity.Config{ClusterID: id}); err != nil {
		t.Fatal(err)
	}
	kc, err := prov.UserKubeconfig(consumerID)
	if err != nil {
		t.Fatal(err)
	}
	create(t, prov.Client,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: provNS, Labels: map[string]string{consts.RemoteClusterIDLabel: consumerID, consts.TenantNamespaceLabel: "true"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: provNS, Name: "liqo-binding-liqo-remote-controlplane"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.RemoteControlPlaneClusterRole},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: consumerID}}},
		&authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: provNS, Name: consumerID},
			Spec: authv1beta1.TenantSpec{ClusterID: consumerID, TenantCondition: authv1beta1.TenantConditionActive}},
	)
	return kc
}

// TestSomeFailed: a namespace offloaded to two providers, of which one creates the remote
// namespace and the other cannot (the name is taken there), is SomeFailed, with the reason
// on the failing provider's condition only.
func TestSomeFailed(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer"}, testenv.ClusterOptions{Name: "good"}, testenv.ClusterOptions{Name: "bad"})
	cons, good, bad := env.Cluster("consumer"), env.Cluster("good"), env.Cluster("bad")
	const goodID, badID = "cl-good", "cl-bad"
	peer(t, cons, good, goodID)
	peer(t, cons, bad, badID)
	create(t, bad.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "omega"}}) // somebody else's, on bad only
	create(t, cons.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "omega"}})
	testenv.StartManager(t, cons, func(mgr ctrl.Manager) error {
		if err := replication.NewNamespaceMapReconciler(mgr.GetClient(), consumerID).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&namespaceoffloading.Reconciler{Client: mgr.GetClient(), LocalClusterID: consumerID}).SetupWithManager(mgr)
	})

	create(t, cons.Client, offloading("omega", offv1beta1.EnforceSameNameMappingStrategyType, "", selectRegion("eu")))
	nsoff := &offv1beta1.NamespaceOffloading{}
	testenv.Eventually(t, "omega SomeFailed, Ready on the good provider", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: "omega", Name: consts.NamespaceOffloadingName}, nsoff) == nil &&
			nsoff.Status.OffloadingPhase == offv1beta1.SomeFailedOffloadingPhaseType &&
			condition(nsoff.Status.RemoteNamespacesConditions[goodID], offv1beta1.NamespaceReady).Status == corev1.ConditionTrue
	})
	if nsoff.Status.RemoteNamespaceName != "omega" || len(nsoff.Status.RemoteNamespacesConditions) != 2 {
		t.Errorf("status: remote name %q, conditions %+v", nsoff.Status.RemoteNamespaceName, nsoff.Status.RemoteNamespacesConditions)
	}
	if r := condition(nsoff.Status.RemoteNamespacesConditions[badID], offv1beta1.NamespaceReady); r.Status != corev1.ConditionFalse ||
		r.Reason != namespaceoffloading.ReasonCreationFailed {
		t.Errorf("the bad provider's Ready condition %+v, want False %s", r, namespaceoffloading.ReasonCreationFailed)
	}
	for _, id := range []string{goodID, badID} {
		if r := condition(nsoff.Status.RemoteNamespacesConditions[id], offv1beta1.NamespaceOffloadingRequired); r.Status != corev1.ConditionTrue {
			t.Errorf("%s: OffloadingRequired %+v, want True", id, r)
		}
	}
	ns := &corev1.Namespace{}
	if err := good.Client.Get(t.Context(), client.ObjectKey{Name: "omega"}, ns); err != nil || ns.Labels[consts.RemoteClusterIDLabel] != consumerID {
		t.Errorf("the good provider's remote namespace: labels %v, %v", ns.Labels, err)
	}
	if err := bad.Client.Get(t.Context(), client.ObjectKey{Name: "omega"}, ns); err != nil || ns.Labels[consts.RemoteNamespaceLabel] != "" {
		t.Errorf("the bad provider's namespace omega, somebody else's: labels %v, %v", ns.Labels, err)
	}
}
