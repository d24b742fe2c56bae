package namespaceoffloading_test

import (
	"context"
	"slices"
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
	"github.com/peerkit/terraform-provider-liqo/controllers/namespaceoffloading"
	"github.com/peerkit/terraform-provider-liqo/controllers/replication"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

const (
	consumerID, providerID = "cl-consumer", "cl-provider"
	// provNS is the consumer's tenant namespace on the provider, consNS the provider's on the consumer.
	provNS, consNS = "liqo-tenant-cl-consumer", "liqo-tenant-cl-provider"
)

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func virtualNode(name, cluster, region string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		consts.TypeLabel: consts.VirtualNodeType, consts.RemoteClusterIDLabel: cluster, "topology.kubernetes.io/region": region}}}
}

// selectRegion is a cluster selector on the virtual nodes' region.
func selectRegion(region string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "topology.kubernetes.io/region", Operator: corev1.NodeSelectorOpIn, Values: []string{region}}}}}}
}

func offloading(ns string, strategy offv1beta1.NamespaceMappingStrategyType, remote string, sel *corev1.NodeSelector) *offv1beta1.NamespaceOffloading {
	return &offv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consts.NamespaceOffloadingName},
		Spec: offv1beta1.NamespaceOffloadingSpec{NamespaceMappingStrategy: strategy, PodOffloadingStrategy: offv1beta1.LocalAndRemotePodOffloadingStrategyType,
			RemoteNamespaceName: remote, ClusterSelector: sel}}
}

func condition(conds offv1beta1.RemoteNamespaceConditions, t offv1beta1.RemoteNamespaceConditionType) offv1beta1.RemoteNamespaceCondition {
	for _, c := range conds {
		if c.Type == t {
			return c
		}
	}
	return offv1beta1.RemoteNamespaceCondition{}
}

// TestNamespaceOffloading runs, on two clusters, the consumer's offloading and replication
// controllers and the provider's NamespaceMap controller: each mapping strategy yields the
// right remote namespace, bound to the consumer's user, and a Ready offloading; the consumer's
// identity can work in its remote namespace and nowhere else; a selector matching no virtual
// node selects nothing; a taken name fails; deselecting and deleting remove the remote
// namespaces and leave no finalizer; a provider declared gone does not block deletion.
func TestNamespaceOffloading(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer"},
		testenv.ClusterOptions{Name: "provider", ControllerManager: true}) // namespaces finish deleting
	cons, prov := env.Cluster("consumer"), env.Cluster("provider")
	ctx := t.Context()

	// The peering as the authentication controllers leave it: tenant namespaces, the consumer's
	// Tenant and control-plane binding on the provider, its identity Secret on the consumer.
	kc := providerSide(t, prov, providerID)
	create(t, prov.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "taken"}}) // somebody else's
	create(t, cons.Client,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consNS, Labels: map[string]string{consts.RemoteClusterIDLabel: providerID, consts.TenantNamespaceLabel: "true"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "kubeconfig-controlplane",
			Labels:      map[string]string{consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: providerID},
			Annotations: map[string]string{consts.RemoteTenantNamespaceAnnotation: provNS}},
			Data: map[string][]byte{consts.KubeconfigSecretKey: kc}},
		virtualNode("liqo-cl-provider", providerID, "eu"),
	)
	for _, ns := range []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"} {
		create(t, cons.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}

	testenv.StartManager(t, cons, func(mgr ctrl.Manager) error {
		if err := replication.NewNamespaceMapReconciler(mgr.GetClient(), consumerID).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&namespaceoffloading.Reconciler{Client: mgr.GetClient(), LocalClusterID: consumerID}).SetupWithManager(mgr)
	})
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		return (&namespacemap.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("namespacemap")}).SetupWithManager(mgr)
	})

	// Each mapping strategy.
	cases := []struct {
		local    string
		strategy offv1beta1.NamespaceMappingStrategyType
		selected string
		remote   string
	}{
		{"alpha", offv1beta1.EnforceSameNameMappingStrategyType, "", "alpha"},
		{"beta", offv1beta1.DefaultNameMappingStrategyType, "", "beta-cl-consumer"},
		{"gamma", offv1beta1.SelectedNameMappingStrategyType, "gamma-remote", "gamma-remote"},
	}
	began := time.Now()
	for _, c := range cases {
		create(t, cons.Client, offloading(c.local, c.strategy, c.selected, selectRegion("eu")))
	}
	for _, c := range cases {
		nsoff := &offv1beta1.NamespaceOffloading{}
		testenv.Eventually(t, c.local+" Ready", 30*time.Second, func(ctx context.Context) bool {
			return cons.Client.Get(ctx, client.ObjectKey{Namespace: c.local, Name: consts.NamespaceOffloadingName}, nsoff) == nil &&
				nsoff.Status.OffloadingPhase == offv1beta1.ReadyOffloadingPhaseType
		})
		if nsoff.Status.RemoteNamespaceName != c.remote {
			t.Errorf("%s: status.remoteNamespaceName %q, want %q", c.local, nsoff.Status.RemoteNamespaceName, c.remote)
		}
		conds := nsoff.Status.RemoteNamespacesConditions[providerID]
		if condition(conds, offv1beta1.NamespaceReady).Status != corev1.ConditionTrue || condition(conds, offv1beta1.NamespaceOffloadingRequired).Status != corev1.ConditionTrue ||
			len(nsoff.Status.RemoteNamespacesConditions) != 1 {
			t.Errorf("%s: conditions %+v", c.local, nsoff.Status.RemoteNamespacesConditions)
		}
		if !slices.Contains(nsoff.Finalizers, namespaceoffloading.Finalizer) {
			t.Errorf("%s: finalizers %v", c.local, nsoff.Finalizers)
		}
		localNS := &corev1.Namespace{}
		if err := cons.Client.Get(ctx, client.ObjectKey{Name: c.local}, localNS); err != nil || localNS.Labels[consts.SchedulingEnabledLabel] != "true" {
			t.Errorf("%s: namespace labels %v (%v), want %s=true for the pod-placement webhook", c.local, localNS.Labels, err, consts.SchedulingEnabledLabel)
		}
		ns := &corev1.Namespace{}
		if err := prov.Client.Get(ctx, client.ObjectKey{Name: c.remote}, ns); err != nil {
			t.Fatalf("%s: remote namespace %s: %v", c.local, c.remote, err)
		}
		if ns.Labels[consts.RemoteNamespaceLabel] != "true" || ns.Labels[consts.RemoteClusterIDLabel] != consumerID ||
			ns.Annotations[consts.OriginNamespaceAnnotation] != c.local {
			t.Errorf("%s: remote namespace labels %v annotations %v", c.local, ns.Labels, ns.Annotations)
		}
		rb := &rbacv1.RoleBinding{}
		if err := prov.Client.Get(ctx, client.ObjectKey{Namespace: c.remote, Name: namespacemap.RoleBindingName}, rb); err != nil {
			t.Fatalf("%s: binding: %v", c.local, err)
		}
		if rb.RoleRef.Name != clusteridentity.RemoteWorkloadClusterRole || len(rb.Subjects) != 1 ||
			rb.Subjects[0].Kind != rbacv1.UserKind || rb.Subjects[0].Name != consumerID {
			t.Errorf("%s: binding %+v %+v", c.local, rb.RoleRef, rb.Subjects)
		}
	}
	t.Logf("three namespaces offloaded (Ready) %v after their NamespaceOffloadings were created", time.Since(began).Round(time.Millisecond))
	// The consumer's one NamespaceMap for the provider, and its copy.
	nm := &offv1beta1.NamespaceMap{}
	if err := cons.Client.Get(ctx, client.ObjectKey{Namespace: consNS, Name: providerID}, nm); err != nil {
		t.Fatal(err)
	}
	if nm.Labels[consts.ReplicationLabel] != "true" || nm.Labels[consts.RemoteClusterIDLabel] != providerID ||
		nm.Spec.DesiredMapping["alpha"] != "alpha" || nm.Spec.DesiredMapping["beta"] != "beta-cl-consumer" || nm.Spec.DesiredMapping["gamma"] != "gamma-remote" {
		t.Errorf("NamespaceMap: labels %v spec %v", nm.Labels, nm.Spec.DesiredMapping)
	}

	// The consumer's identity works in its remote namespace, and nowhere else.
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := client.New(cfg, client.Options{Scheme: prov.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}
	if err := peer.Create(ctx, &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: "alpha", Name: "p"}, Spec: offv1beta1.ShadowPodSpec{Pod: podSpec}}); err != nil {
		t.Errorf("identity creates a ShadowPod in its remote namespace: %v", err)
	}
	if err := peer.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "alpha", Name: "cm"}}); err != nil {
		t.Errorf("identity creates a ConfigMap in its remote namespace: %v", err)
	}
	forbidden := map[string]error{
		"create a Pod in its remote namespace (pods come from ShadowPods)": peer.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "alpha", Name: "p"}, Spec: podSpec}),
		"create a Pod in default":           peer.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}, Spec: podSpec}),
		"create a ShadowPod in default":     peer.Create(ctx, &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}, Spec: offv1beta1.ShadowPodSpec{Pod: podSpec}}),
		"create a ShadowPod in taken":       peer.Create(ctx, &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: "taken", Name: "p"}, Spec: offv1beta1.ShadowPodSpec{Pod: podSpec}}),
		"create a ConfigMap in default":     peer.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm"}}),
		"list Secrets in its tenant ns":     peer.List(ctx, &corev1.SecretList{}, client.InNamespace(provNS)),
		"create a namespace":                peer.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}),
		"delete its remote namespace":       peer.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}}),
		"edit the binding in its remote ns": peer.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "alpha", Name: namespacemap.RoleBindingName}}),
	}
	for what, err := range forbidden {
		if !apierrors.IsForbidden(err) {
			t.Errorf("identity may %s: %v, want Forbidden", what, err)
		}
	}

	// A selector matching no virtual node selects nothing.
	create(t, cons.Client, offloading("delta", offv1beta1.DefaultNameMappingStrategyType, "", selectRegion("nowhere")))
	testenv.Eventually(t, "delta NoClusterSelected", 30*time.Second, func(ctx context.Context) bool {
		o := &offv1beta1.NamespaceOffloading{}
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: "delta", Name: consts.NamespaceOffloadingName}, o) == nil &&
			o.Status.OffloadingPhase == offv1beta1.NoClusterSelectedOffloadingPhaseType && o.Status.RemoteNamespaceName == "delta-cl-consumer"
	})
	if err := cons.Client.Get(ctx, client.ObjectKeyFromObject(nm), nm); err != nil {
		t.Fatal(err)
	}
	if _, ok := nm.Spec.DesiredMapping["delta"]; ok {
		t.Errorf("delta is in the map though no cluster is selected: %v", nm.Spec.DesiredMapping)
	}

	// A name taken by a namespace that is not ours fails, with an Event saying what to do; the
	// namespace is left alone, also when the offloading is withdrawn.
	create(t, cons.Client, offloading("epsilon", offv1beta1.SelectedNameMappingStrategyType, "taken", nil))
	eps := &offv1beta1.NamespaceOffloading{}
	testenv.Eventually(t, "epsilon AllFailed", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: "epsilon", Name: consts.NamespaceOffloadingName}, eps) == nil &&
			eps.Status.OffloadingPhase == offv1beta1.AllFailedOffloadingPhaseType
	})
	if r := condition(eps.Status.RemoteNamespacesConditions[providerID], offv1beta1.NamespaceReady); r.Reason != namespaceoffloading.ReasonCreationFailed || !strings.Contains(r.Message, "taken") {
		t.Errorf("epsilon Ready condition %+v", r)
	}
	testenv.Eventually(t, "an Event naming the taken namespace", 30*time.Second, func(ctx context.Context) bool {
		evs := &eventsv1.EventList{}
		if prov.Client.List(ctx, evs, client.InNamespace(provNS)) != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == "NamespaceConflict" && strings.Contains(e.Note, "namespace taken already exists") && strings.Contains(e.Note, "delete or rename") {
				return true
			}
		}
		return false
	})
	if err := cons.Client.Delete(ctx, eps); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "epsilon released", 30*time.Second, func(ctx context.Context) bool {
		return apierrors.IsNotFound(cons.Client.Get(ctx, client.ObjectKeyFromObject(eps), eps))
	})
	if err := prov.Client.Get(ctx, client.ObjectKey{Name: "taken"}, &corev1.Namespace{}); err != nil {
		t.Errorf("somebody else's namespace: %v", err)
	}

	// beta no longer matches: its remote namespace goes, and it selects nothing.
	beta := &offv1beta1.NamespaceOffloading{}
	if err := cons.Client.Get(ctx, client.ObjectKey{Namespace: "beta", Name: consts.NamespaceOffloadingName}, beta); err != nil {
		t.Fatal(err)
	}
	beta.Spec.ClusterSelector = selectRegion("us")
	if err := cons.Client.Update(ctx, beta); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "beta-cl-consumer gone, beta NoClusterSelected", 30*time.Second, func(ctx context.Context) bool {
		return apierrors.IsNotFound(prov.Client.Get(ctx, client.ObjectKey{Name: "beta-cl-consumer"}, &corev1.Namespace{})) &&
			cons.Client.Get(ctx, client.ObjectKeyFromObject(beta), beta) == nil &&
			beta.Status.OffloadingPhase == offv1beta1.NoClusterSelectedOffloadingPhaseType && len(beta.Status.RemoteNamespacesConditions) == 0
	})

	// Deleting the offloadings removes the remote namespaces (with what the consumer put
	// there), then the offloadings.
	for _, ns := range []string{"alpha", "beta", "gamma", "delta"} {
		if err := cons.Client.Delete(ctx, &offv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consts.NamespaceOffloadingName}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the remote namespaces and the offloadings gone", 30*time.Second, func(ctx context.Context) bool {
		for _, name := range []string{"alpha", "gamma-remote"} {
			if !apierrors.IsNotFound(prov.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})) {
				return false
			}
		}
		list := &offv1beta1.NamespaceOffloadingList{}
		return cons.Client.List(ctx, list) == nil && len(list.Items) == 0
	})
	for _, ns := range []string{"alpha", "beta", "gamma", "delta"} {
		localNS := &corev1.Namespace{}
		if err := cons.Client.Get(ctx, client.ObjectKey{Name: ns}, localNS); err != nil || localNS.Labels[consts.SchedulingEnabledLabel] != "" {
			t.Errorf("%s after its offloading went: labels %v (%v), want no %s", ns, localNS.Labels, err, consts.SchedulingEnabledLabel)
		}
	}
	remotes := &corev1.NamespaceList{}
	if err := prov.Client.List(ctx, remotes, client.MatchingLabels{consts.RemoteNamespaceLabel: "true"}); err != nil || len(remotes.Items) != 0 {
		t.Errorf("remote namespaces left: %v %v", remotes.Items, err)
	}
	testenv.Eventually(t, "the map empty on both sides", 30*time.Second, func(ctx context.Context) bool {
		copyOf := &offv1beta1.NamespaceMap{}
		return cons.Client.Get(ctx, client.ObjectKeyFromObject(nm), nm) == nil && len(nm.Spec.DesiredMapping) == 0 && len(nm.Status.CurrentMapping) == 0 &&
			prov.Client.Get(ctx, client.ObjectKey{Namespace: provNS, Name: providerID}, copyOf) == nil && len(copyOf.Spec.DesiredMapping) == 0
	})

	// A second provider, unreachable: zeta is offloaded to both; the gone one had reported
	// its namespace before going. Deleting zeta waits for it until it is declared gone.
	const goneID, goneNS = "cl-gone", "liqo-tenant-cl-gone"
	create(t, cons.Client, virtualNode("liqo-cl-gone", goneID, "eu"),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: goneNS, Labels: map[string]string{consts.RemoteClusterIDLabel: goneID, consts.TenantNamespaceLabel: "true"}}})
	create(t, cons.Client, offloading("zeta", offv1beta1.DefaultNameMappingStrategyType, "", nil))
	zeta := &offv1beta1.NamespaceOffloading{}
	zetaKey := client.ObjectKey{Namespace: "zeta", Name: consts.NamespaceOffloadingName}
	goneMap := &offv1beta1.NamespaceMap{}
	testenv.Eventually(t, "zeta in the gone provider's map", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: goneNS, Name: goneID}, goneMap) == nil && goneMap.Spec.DesiredMapping["zeta"] == "zeta-cl-consumer"
	})
	testenv.Eventually(t, "zeta InProgress (ready on one cluster of two)", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, zetaKey, zeta) == nil && zeta.Status.OffloadingPhase == offv1beta1.InProgressOffloadingPhaseType &&
			condition(zeta.Status.RemoteNamespacesConditions[providerID], offv1beta1.NamespaceReady).Status == corev1.ConditionTrue
	})
	goneMap.Status.CurrentMapping = map[string]offv1beta1.RemoteNamespaceStatus{"zeta": {RemoteNamespace: "zeta-cl-consumer", Phase: offv1beta1.MappingAccepted}}
	if err := cons.Client.Status().Update(ctx, goneMap); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "zeta Ready on both", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, zetaKey, zeta) == nil && zeta.Status.OffloadingPhase == offv1beta1.ReadyOffloadingPhaseType
	})
	if err := cons.Client.Delete(ctx, zeta); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "zeta-cl-consumer gone from the reachable provider", 30*time.Second, func(ctx context.Context) bool {
		return apierrors.IsNotFound(prov.Client.Get(ctx, client.ObjectKey{Name: "zeta-cl-consumer"}, &corev1.Namespace{}))
	})
	testenv.Eventually(t, "zeta Terminating, waiting for the gone provider only", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, zetaKey, zeta) == nil && zeta.Status.OffloadingPhase == offv1beta1.TerminatingOffloadingPhaseType &&
			len(zeta.Status.RemoteNamespacesConditions) == 1 && zeta.Status.RemoteNamespacesConditions[goneID] != nil
	})
	create(t, cons.Client, &corev1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: goneID, Annotations: map[string]string{consts.PeerGoneAnnotation: "true"}},
		Spec: corev1beta1.ForeignClusterSpec{ClusterID: goneID}})
	testenv.Eventually(t, "zeta released once its provider is declared gone", 30*time.Second, func(ctx context.Context) bool {
		return apierrors.IsNotFound(cons.Client.Get(ctx, zetaKey, zeta))
	})
}
