package replication_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/replication"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

const provNS, consNS = "liqo-tenant-cl-consumer", "liqo-tenant-cl-provider"

// startReplication runs the replication reconciler on the consumer; the returned function stops it.
func startReplication(t *testing.T, cons *testenv.Cluster) func() {
	t.Helper()
	return testenv.StartManager(t, cons, func(mgr ctrl.Manager) error {
		if err := replication.NewResourceSliceReconciler(mgr.GetClient(), "cl-consumer").SetupWithManager(mgr); err != nil {
			return err
		}
		return replication.NewNamespaceMapReconciler(mgr.GetClient(), "cl-consumer").SetupWithManager(mgr)
	})
}

// peered starts a consumer and a provider with tenant namespaces for each other, the
// consumer's user bound in its tenant namespace on the provider as the tenant reconciler binds
// it, and its identity Secret on the consumer; it returns the identity's kubeconfig.
func peered(t *testing.T) (cons, prov *testenv.Cluster, kc []byte) {
	t.Helper()
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer"}, testenv.ClusterOptions{Name: "provider"})
	cons, prov = env.Cluster("consumer"), env.Cluster("provider")
	ctx := t.Context()
	if _, err := clusteridentity.Ensure(ctx, prov.Client, clusteridentity.Config{ClusterID: "cl-provider"}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		c  client.Client
		ns string
		id string
	}{{prov.Client, provNS, "cl-consumer"}, {cons.Client, consNS, "cl-provider"}} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.ns, Labels: map[string]string{consts.RemoteClusterIDLabel: o.id, consts.TenantNamespaceLabel: "true"}}}
		if err := o.c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	// The provider binds the consumer's user as the tenant reconciler does.
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: provNS, Name: "liqo-binding-liqo-remote-controlplane"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.RemoteControlPlaneClusterRole},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "cl-consumer"}}}
	if err := prov.Client.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	var err error
	kc, err = prov.UserKubeconfig("cl-consumer")
	if err != nil {
		t.Fatal(err)
	}
	idSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "kubeconfig-controlplane",
		Labels:      map[string]string{consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: "cl-provider"},
		Annotations: map[string]string{consts.RemoteTenantNamespaceAnnotation: provNS}},
		Data: map[string][]byte{consts.KubeconfigSecretKey: kc}}
	if err := cons.Client.Create(ctx, idSecret); err != nil {
		t.Fatal(err)
	}
	return cons, prov, kc
}

// TestReplication: a consumer's slice reaches the provider's tenant namespace through the
// consumer's identity (which may do nothing else), status comes back, spec changes follow,
// an update made while the replicator is down arrives after its restart, updates on both sides
// flow again after the provider's API server was away, and deleting the slice deletes the copy.
func TestReplication(t *testing.T) {
	cons, prov, kc := peered(t)
	ctx := t.Context()
	stop := startReplication(t, cons)
	providerID := corev1beta1.ClusterID("cl-provider")
	local := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "test",
		Labels: map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: "cl-provider"}},
		Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &providerID, Class: "default",
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	if err := cons.Client.Create(ctx, local); err != nil {
		t.Fatal(err)
	}
	remote := &authv1beta1.ResourceSlice{}
	remoteKey := client.ObjectKey{Namespace: provNS, Name: "test"}
	testenv.Eventually(t, "the copy on the provider", 30*time.Second, func(ctx context.Context) bool {
		return prov.Client.Get(ctx, remoteKey, remote) == nil
	})
	if remote.Spec.ConsumerClusterID == nil || *remote.Spec.ConsumerClusterID != "cl-consumer" ||
		remote.Labels[consts.ReplicationOriginLabel] != "cl-consumer" || remote.Spec.Resources.Cpu().String() != "4" {
		t.Errorf("copy: labels %v spec %+v", remote.Labels, remote.Spec)
	}

	// The provider accepts (the stand-in for its negotiation controller): status comes back.
	setRemoteStatus := func(status authv1beta1.ResourceSliceConditionStatus, cpu string) {
		t.Helper()
		r := &authv1beta1.ResourceSlice{}
		if err := prov.Client.Get(ctx, remoteKey, r); err != nil {
			t.Fatal(err)
		}
		r.Status.Conditions = []authv1beta1.ResourceSliceCondition{{Type: "Resources", Status: status, LastTransitionTime: metav1.Now()}}
		r.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		if err := prov.Client.Status().Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	localHas := func(status authv1beta1.ResourceSliceConditionStatus, cpu string) func(context.Context) bool {
		return func(ctx context.Context) bool {
			l := &authv1beta1.ResourceSlice{}
			if cons.Client.Get(ctx, client.ObjectKeyFromObject(local), l) != nil || len(l.Status.Conditions) == 0 {
				return false
			}
			return l.Status.Conditions[0].Status == status && l.Status.Resources.Cpu().String() == cpu
		}
	}
	setRemoteStatus("Accepted", "4")
	testenv.Eventually(t, "the status back on the consumer", 30*time.Second, localHas("Accepted", "4"))

	// A spec change on the consumer reaches the copy.
	if err := cons.Client.Get(ctx, client.ObjectKeyFromObject(local), local); err != nil {
		t.Fatal(err)
	}
	local.Spec.Resources[corev1.ResourceCPU] = resource.MustParse("6")
	if err := cons.Client.Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the new request on the provider", 30*time.Second, func(ctx context.Context) bool {
		return prov.Client.Get(ctx, remoteKey, remote) == nil && remote.Spec.Resources.Cpu().String() == "6"
	})

	// While the replicator is down, the provider answers; after a restart the answer arrives.
	stop()
	setRemoteStatus("Accepted", "6")
	startReplication(t, cons)
	testenv.Eventually(t, "the status after a restart", 30*time.Second, localHas("Accepted", "6"))

	// The provider's API server goes away and comes back: a change made on the consumer
	// meanwhile reaches it, and the provider's later answer comes back (the watches resumed).
	if err := prov.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := cons.Client.Get(ctx, client.ObjectKeyFromObject(local), local); err != nil {
		t.Fatal(err)
	}
	local.Spec.Resources[corev1.ResourceCPU] = resource.MustParse("8")
	if err := cons.Client.Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the replicator fails against the absent provider meanwhile
	if err := prov.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	testenv.Eventually(t, "the change made while the provider was away, on the provider", 30*time.Second, func(ctx context.Context) bool {
		return prov.Client.Get(ctx, remoteKey, remote) == nil && remote.Spec.Resources.Cpu().String() == "8"
	})
	setRemoteStatus("Accepted", "8")
	testenv.Eventually(t, "the provider's answer after its restart", 30*time.Second, localHas("Accepted", "8"))
	t.Logf("replication current %v after the provider's API server restarted", time.Since(restarted).Round(time.Millisecond))

	// The consumer's identity can do nothing but slices and namespace maps in its namespace.
	peer, err := client.New(mustRESTConfig(t, kc), client.Options{Scheme: prov.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := peer.List(ctx, &corev1.SecretList{}, client.InNamespace(provNS)); !apierrors.IsForbidden(err) {
		t.Errorf("identity lists Secrets: %v, want Forbidden", err)
	}

	// Deleting the slice deletes the copy, then the slice.
	if err := cons.Client.Delete(ctx, local); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the copy and the slice gone", 30*time.Second, func(ctx context.Context) bool {
		return apierrors.IsNotFound(prov.Client.Get(ctx, remoteKey, &authv1beta1.ResourceSlice{})) &&
			apierrors.IsNotFound(cons.Client.Get(ctx, client.ObjectKeyFromObject(local), &authv1beta1.ResourceSlice{}))
	})

	// The identity removed (an unpeering): the replicator closes its watches on the provider,
	// whose API server can then stop without waiting for them.
	kube := kubernetes.NewForConfigOrDie(prov.Config)
	watches := func(ctx context.Context) int {
		n, err := testenv.OpenWatches(ctx, kube, "resourceslices")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := watches(ctx); n == 0 {
		t.Fatal("the replicator watches no ResourceSlice on the provider before the identity is removed")
	}
	if err := cons.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "kubeconfig-controlplane"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "no ResourceSlice watch left on the provider", 30*time.Second, func(ctx context.Context) bool {
		return watches(ctx) == 0
	})
}

func mustRESTConfig(t *testing.T, kubeconfig []byte) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestNamespaceMapReplication: a consumer's NamespaceMap reaches the provider's tenant
// namespace, labelled with its origin; the provider's status comes back; a mapping added on
// the consumer follows, as does one added while the replicator is down; deleting the map
// deletes the copy. A map whose provider is declared gone (ForeignCluster annotation) is
// released without reaching it.
func TestNamespaceMapReplication(t *testing.T) {
	cons, prov, _ := peered(t)
	ctx := t.Context()
	stop := startReplication(t, cons)

	local := &offv1beta1.NamespaceMap{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "cl-provider",
		Labels: map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: "cl-provider"}},
		Spec: offv1beta1.NamespaceMapSpec{DesiredMapping: map[string]string{"demo": "demo-cl-consumer"}}}
	if err := cons.Client.Create(ctx, local); err != nil {
		t.Fatal(err)
	}
	remoteKey := client.ObjectKey{Namespace: provNS, Name: "cl-provider"}
	remote := &offv1beta1.NamespaceMap{}
	testenv.Eventually(t, "the copy on the provider", 30*time.Second, func(ctx context.Context) bool {
		return prov.Client.Get(ctx, remoteKey, remote) == nil
	})
	if remote.Labels[consts.ReplicationOriginLabel] != "cl-consumer" || remote.Labels[consts.RemoteClusterIDLabel] != "cl-consumer" ||
		remote.Labels[consts.ReplicationLabel] != "" || remote.Annotations[consts.ReplicationOriginNamespaceAnnotation] != consNS ||
		remote.Spec.DesiredMapping["demo"] != "demo-cl-consumer" || remote.Labels[consts.ReplicatedLabel] != "true" ||
		remote.Labels[consts.ReplicationDestinationLabel] != "" {
		t.Errorf("copy: labels %v annotations %v spec %+v", remote.Labels, remote.Annotations, remote.Spec)
	}
	// The original names where it went (upstream's label, which its tools select on).
	testenv.Eventually(t, "the original's destination label", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKeyFromObject(local), local) == nil &&
			local.Labels[consts.ReplicationDestinationLabel] == "cl-provider"
	})

	// The provider reports (the stand-in for its namespacemap controller): status comes back.
	setRemoteStatus := func(current map[string]offv1beta1.RemoteNamespaceStatus) {
		t.Helper()
		r := &offv1beta1.NamespaceMap{}
		if err := prov.Client.Get(ctx, remoteKey, r); err != nil {
			t.Fatal(err)
		}
		r.Status.CurrentMapping = current
		if err := prov.Client.Status().Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	localHas := func(want map[string]offv1beta1.RemoteNamespaceStatus) func(context.Context) bool {
		return func(ctx context.Context) bool {
			l := &offv1beta1.NamespaceMap{}
			return cons.Client.Get(ctx, client.ObjectKeyFromObject(local), l) == nil &&
				len(l.Status.CurrentMapping) == len(want) && (len(want) == 0 || reflect.DeepEqual(l.Status.CurrentMapping, want))
		}
	}
	accepted := map[string]offv1beta1.RemoteNamespaceStatus{"demo": {RemoteNamespace: "demo-cl-consumer", Phase: offv1beta1.MappingAccepted}}
	setRemoteStatus(accepted)
	testenv.Eventually(t, "the status back on the consumer", 30*time.Second, localHas(accepted))

	// A new mapping on the consumer reaches the copy.
	addMapping := func(localNs, remoteNs string) {
		t.Helper()
		l := &offv1beta1.NamespaceMap{}
		if err := cons.Client.Get(ctx, client.ObjectKeyFromObject(local), l); err != nil {
			t.Fatal(err)
		}
		l.Spec.DesiredMapping[localNs] = remoteNs
		if err := cons.Client.Update(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	addMapping("web", "web")
	testenv.Eventually(t, "the new mapping on the provider", 30*time.Second, func(ctx context.Context) bool {
		return prov.Client.Get(ctx, remoteKey, remote) == nil && remote.Spec.DesiredMapping["web"] == "web"
	})

	// While the replicator is down, both sides change; after a restart both changes arrive.
	stop()
	addMapping("api", "api-x")
	accepted["web"] = offv1beta1.RemoteNamespaceStatus{RemoteNamespace: "web", Phase: offv1beta1.MappingAccepted}
	setRemoteStatus(accepted)
	startReplication(t, cons)
	testenv.Eventually(t, "the status after a restart", 30*time.Second, localHas(accepted))
	testenv.Eventually(t, "the spec after a restart", 30*time.Second, func(ctx context.Context) bool {
		return prov.Client.Get(ctx, remoteKey, remote) == nil && remote.Spec.DesiredMapping["api"] == "api-x"
	})

	// A status emptied on the provider empties the consumer's.
	setRemoteStatus(nil)
	testenv.Eventually(t, "the emptied status", 30*time.Second, localHas(nil))

	// Deleting the map deletes the copy, then the map.
	if err := cons.Client.Delete(ctx, local); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the copy and the map gone", 30*time.Second, func(ctx context.Context) bool {
		return apierrors.IsNotFound(prov.Client.Get(ctx, remoteKey, &offv1beta1.NamespaceMap{})) &&
			apierrors.IsNotFound(cons.Client.Get(ctx, client.ObjectKeyFromObject(local), &offv1beta1.NamespaceMap{}))
	})

	// A map for a provider that cannot be reached (here: no identity for it) keeps its
	// finalizer on deletion until the provider is declared gone.
	const goneNS = "liqo-tenant-cl-gone"
	if err := cons.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: goneNS,
		Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-gone", consts.TenantNamespaceLabel: "true"}}}); err != nil {
		t.Fatal(err)
	}
	gone := &offv1beta1.NamespaceMap{ObjectMeta: metav1.ObjectMeta{Namespace: goneNS, Name: "cl-gone",
		Labels:     map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: "cl-gone"},
		Finalizers: []string{"liqo.io/replication"}}, // as if replicated before the provider went away
		Spec: offv1beta1.NamespaceMapSpec{DesiredMapping: map[string]string{"demo": "demo"}}}
	if err := cons.Client.Create(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := cons.Client.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the reconciler has seen the deletion
	if err := cons.Client.Get(ctx, client.ObjectKeyFromObject(gone), gone); err != nil {
		t.Fatalf("the map of an unreachable provider went without its copy being deleted: %v", err)
	}
	fc := &corev1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "cl-gone", Annotations: map[string]string{consts.PeerGoneAnnotation: "true"}},
		Spec: corev1beta1.ForeignClusterSpec{ClusterID: "cl-gone"}}
	if err := cons.Client.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the gone provider's map released", 30*time.Second, func(ctx context.Context) bool {
		return apierrors.IsNotFound(cons.Client.Get(ctx, client.ObjectKeyFromObject(gone), &offv1beta1.NamespaceMap{}))
	})
}
