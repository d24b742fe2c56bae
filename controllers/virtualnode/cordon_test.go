package virtualnode_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/negotiation"
	"github.com/peerkit/terraform-provider-liqo/controllers/replication"
	"github.com/peerkit/terraform-provider-liqo/controllers/virtualnode"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// TestSliceClassAndCordon, with the consumer's replication and virtual-node controllers and the
// provider's negotiation: a slice of another class is not decided by the provider's negotiation
// (a default one beside it is); once the controller of its class accepts it (the test writes
// its status on the provider's copy), its virtual node comes up on the consumer. Cordoned on the
// provider as `liqoctl cordon resourceslice` does, the Node goes unschedulable while its pod
// stays; uncordoned, schedulable again; likewise for the consumer's own cordon of its slice. A
// node cordoned by a user (kubectl cordon) stays cordoned across the slice's cordon and
// uncordon; a kubectl uncordon while the slice is cordoned is undone once, and then nothing
// flaps.
func TestSliceClassAndCordon(t *testing.T) {
	// Its own clusters: no controller manager on the consumer, whose node lifecycle and pod GC would act on the Nodes and pod it checks.
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer"}, testenv.ClusterOptions{Name: "provider"})
	cons, prov := env.Cluster("consumer"), env.Cluster("provider")
	ctx := t.Context()
	const consNS, provNS = "liqo-tenant-cl-provider", "liqo-tenant-cl-consumer"

	// The peering's objects, as the handshake leaves them (see replication_test's peered).
	if _, err := clusteridentity.Ensure(ctx, prov.Client, clusteridentity.Config{ClusterID: "cl-provider"}); err != nil {
		t.Fatal(err)
	}
	kc, err := prov.UserKubeconfig("cl-consumer")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		c   client.Client
		obj client.Object
	}{
		{prov.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: provNS,
			Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-consumer", consts.TenantNamespaceLabel: "true"}}}},
		{prov.Client, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: provNS, Name: "liqo-binding-liqo-remote-controlplane"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.RemoteControlPlaneClusterRole},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "cl-consumer"}}}},
		{cons.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consNS,
			Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-provider", consts.TenantNamespaceLabel: "true"}}}},
		{cons.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "kubeconfig-controlplane",
			Labels:      map[string]string{consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: "cl-provider"},
			Annotations: map[string]string{consts.RemoteTenantNamespaceAnnotation: provNS}},
			Data: map[string][]byte{consts.KubeconfigSecretKey: kc}}},
	} {
		if err := o.c.Create(ctx, o.obj); err != nil {
			t.Fatal(err)
		}
	}
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		return (&negotiation.Reconciler{Client: mgr.GetClient(), Policy: negotiation.Policy{Fixed: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("8")}}}).SetupWithManager(mgr)
	})
	runner := vnode.NewRunner(kubernetes.NewForConfigOrDie(cons.Config), vnode.Options{ProbeInterval: time.Second, LeaseDurationSeconds: 4}, ctrl.Log)
	testenv.StartManager(t, cons, func(mgr ctrl.Manager) error {
		if err := replication.NewResourceSliceReconciler(mgr.GetClient(), "cl-consumer").SetupWithManager(mgr); err != nil {
			return err
		}
		if err := (&virtualnode.SliceReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&virtualnode.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Runner: runner,
			DrainGrace: time.Second}).SetupWithManager(mgr)
	})

	providerID := corev1beta1.ClusterID("cl-provider")
	newSlice := func(name string, class authv1beta1.ResourceSliceClass) *authv1beta1.ResourceSlice {
		return &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: name,
			Labels: map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: "cl-provider"}},
			Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &providerID, Class: class,
				Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
	}
	gpu, std := newSlice("gpu", "gpu"), newSlice("std", authv1beta1.ResourceSliceClassDefault)
	for _, s := range []*authv1beta1.ResourceSlice{gpu, std} {
		if err := cons.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// The default one is decided (denied: the provider has no Tenant here), and its answer
	// comes back; the other class's copy is replicated too (the two are replicated in
	// parallel, so either may come first) and is not decided.
	testenv.Eventually(t, "the default-class slice decided and its answer back on the consumer", 30*time.Second, func(ctx context.Context) bool {
		s := &authv1beta1.ResourceSlice{}
		return cons.Client.Get(ctx, client.ObjectKeyFromObject(std), s) == nil && len(s.Status.Conditions) == 2
	})
	remoteGPU := &authv1beta1.ResourceSlice{}
	testenv.Eventually(t, "the gpu slice's copy on the provider", 30*time.Second, func(ctx context.Context) bool {
		return prov.Client.Get(ctx, client.ObjectKey{Namespace: provNS, Name: "gpu"}, remoteGPU) == nil
	})
	if len(remoteGPU.Status.Conditions) != 0 {
		t.Fatalf("the gpu slice's copy was decided by the default negotiation: %+v", remoteGPU.Status)
	}

	// The gpu class's controller accepts it.
	remoteGPU.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	remoteGPU.Status.Conditions = []authv1beta1.ResourceSliceCondition{
		{Type: authv1beta1.ResourceSliceConditionTypeAuthentication, Status: authv1beta1.ResourceSliceConditionAccepted, LastTransitionTime: metav1.Now()},
		{Type: authv1beta1.ResourceSliceConditionTypeResources, Status: authv1beta1.ResourceSliceConditionAccepted, LastTransitionTime: metav1.Now()}}
	if err := prov.Client.Status().Update(ctx, remoteGPU); err != nil {
		t.Fatal(err)
	}
	name := consts.VirtualNodeName("cl-provider", "gpu")
	node := &corev1.Node{}
	testenv.Eventually(t, "the gpu slice's virtual node Ready", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Name: name}, node) == nil && nodeReady(node) == corev1.ConditionTrue
	})
	if node.Spec.Unschedulable || node.Status.Capacity.Cpu().String() != "2" {
		t.Fatalf("new virtual node: unschedulable %t, capacity %v; want schedulable with the gpu controller's grant", node.Spec.Unschedulable, node.Status.Capacity)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "running"},
		Spec: corev1.PodSpec{NodeName: name, Tolerations: []corev1.Toleration{{Key: vnode.Taint.Key, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if err := cons.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}

	annotate := func(c client.Client, key client.ObjectKey, k, v string) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := &authv1beta1.ResourceSlice{}
			if err := c.Get(ctx, key, s); err != nil {
				return err
			}
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			if v == "" {
				delete(s.Annotations, k)
			} else {
				s.Annotations[k] = v
			}
			return c.Update(ctx, s)
		}); err != nil {
			t.Fatal(err)
		}
	}
	// kubectl cordon / uncordon of the node.
	kubectlCordon := func(unschedulable bool) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := cons.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return err
			}
			n.Spec.Unschedulable = unschedulable
			return cons.Client.Update(ctx, n)
		}); err != nil {
			t.Fatal(err)
		}
	}
	nodeIs := func(what string, unschedulable, marked bool) {
		t.Helper()
		testenv.Eventually(t, what, 30*time.Second, func(ctx context.Context) bool {
			return cons.Client.Get(ctx, client.ObjectKey{Name: name}, node) == nil && node.Spec.Unschedulable == unschedulable &&
				(node.Annotations[consts.SliceCordonNodeAnnotation] == "true") == marked
		})
	}
	// stays checks for a while that the node keeps unschedulable as it is (nobody flips it).
	stays := func(what string, unschedulable bool) {
		t.Helper()
		for range 20 {
			if err := cons.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				t.Fatal(err)
			}
			if node.Spec.Unschedulable != unschedulable {
				t.Fatalf("%s: the node's spec.unschedulable went %t", what, node.Spec.Unschedulable)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	remoteKey, localKey := client.ObjectKey{Namespace: provNS, Name: "gpu"}, client.ObjectKeyFromObject(gpu)

	// liqoctl cordon resourceslice gpu --remote-cluster-id cl-consumer, on the provider.
	annotate(prov.Client, remoteKey, consts.CordonAnnotation, "true")
	nodeIs("the node unschedulable with its slice cordoned on the provider", true, true)
	p := &corev1.Pod{}
	if err := cons.Client.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the pod on the cordoned node: %v, deletion %v; want it left running", err, p.DeletionTimestamp)
	}
	// liqoctl uncordon resourceslice.
	annotate(prov.Client, remoteKey, consts.CordonAnnotation, "")
	nodeIs("the node schedulable again with its slice uncordoned", false, false)

	// The consumer's own cordon of its slice.
	annotate(cons.Client, localKey, consts.CordonAnnotation, "true")
	nodeIs("the node unschedulable with the consumer's cordon", true, true)
	annotate(cons.Client, localKey, consts.CordonAnnotation, "")
	nodeIs("the node schedulable after the consumer's uncordon", false, false)

	// A user's kubectl cordon is not undone: neither while the slice is not cordoned, nor by
	// the slice's cordon and uncordon.
	kubectlCordon(true)
	stays("a node cordoned by a user", true)
	annotate(prov.Client, remoteKey, consts.CordonAnnotation, "true")
	testenv.Eventually(t, "the provider's cordon on the consumer's slice", 30*time.Second, func(ctx context.Context) bool {
		s := &authv1beta1.ResourceSlice{}
		return cons.Client.Get(ctx, localKey, s) == nil && s.Annotations[consts.ProviderCordonAnnotation] == "true"
	})
	stays("a user-cordoned node with its slice cordoned", true)
	nodeIs("no mark on a node a user cordoned first", true, false)
	annotate(prov.Client, remoteKey, consts.CordonAnnotation, "")
	testenv.Eventually(t, "the provider's uncordon on the consumer's slice", 30*time.Second, func(ctx context.Context) bool {
		s := &authv1beta1.ResourceSlice{}
		return cons.Client.Get(ctx, localKey, s) == nil && s.Annotations[consts.ProviderCordonAnnotation] == ""
	})
	stays("a user-cordoned node after its slice's uncordon", true)
	kubectlCordon(false)
	stays("a node the user uncordoned", false)

	// While the slice is cordoned, a kubectl uncordon is undone (the slice's cordon wins), once.
	annotate(prov.Client, remoteKey, consts.CordonAnnotation, "true")
	nodeIs("the node unschedulable with its slice cordoned again", true, true)
	kubectlCordon(false)
	nodeIs("a kubectl uncordon undone while the slice is cordoned", true, true)
	stays("the cordoned slice's node, settled", true)
	annotate(prov.Client, remoteKey, consts.CordonAnnotation, "")
	nodeIs("the node schedulable at the end", false, false)
	stays("the uncordoned slice's node, settled", false)
}
