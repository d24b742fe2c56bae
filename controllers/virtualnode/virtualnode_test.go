package virtualnode_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/virtualnode"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// TestVirtualNodeFromAcceptedSlice: an accepted slice yields a virtual node running with the
// provider's control-plane identity, moved (with the virtual nodes made apart from the slice on
// that identity, not those naming a Secret of their own) to the slice's own identity once it
// names its kubeconfig Secret: the node turns Ready, that kubeconfig reaching the provider
// where the control-plane one does not; a new kubeconfig in that Secret (a renewed
// certificate) restarts the node with it. It has the granted capacity, the virtual-node label and NoExecute taint, and a Lease heartbeat; when the
// provider's API server goes away the node turns NotReady; deleting the slice removes the node.
func TestVirtualNodeFromAcceptedSlice(t *testing.T) {
	consumerEnv := peered.Env(t) // its own provider: the test stops it
	providerEnv, err := testenv.Start(t.Context(), testenv.ClusterOptions{Name: "provider"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = providerEnv.Stop() })
	cons, prov := consumerEnv.Cluster("consumer"), providerEnv.Cluster("provider")
	ctx := t.Context()

	runner := vnode.NewRunner(kubernetes.NewForConfigOrDie(cons.Config), vnode.Options{ProbeInterval: time.Second, LeaseDurationSeconds: 4}, ctrl.Log)
	testenv.StartManager(t, cons, func(mgr ctrl.Manager) error {
		if err := (&virtualnode.SliceReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&virtualnode.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Runner: runner,
			DrainGrace: time.Second}).SetupWithManager(mgr)
	})

	const ns = "liqo-tenant-cl-provider"
	// The slice certificate's subject (CN <slice>-<hash>, O <consumer ID>); the control-plane
	// kubeconfig reaches no API server, so the node is Ready only once it runs with the slice's.
	kc, err := prov.UserKubeconfig("test-0123456789ab", "cl-consumer")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := unreachableKubeconfig(t, kc)
	providerID := corev1beta1.ClusterID("cl-provider")
	slice := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test",
		Labels: map[string]string{consts.ReplicationLabel: "true"}},
		Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &providerID,
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}}}
	// TestDeploymentRunner may have made the tenant namespace on the shared consumer already.
	if err := cons.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig-controlplane",
			Labels: map[string]string{consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: "cl-provider"}},
			Data: map[string][]byte{consts.KubeconfigSecretKey: unreachable}},
		slice,
		// Virtual nodes made apart from the slice (liqo_virtual_node): one with the default
		// Secret, one with a Secret of its own.
		madeApart("apart-default", "kubeconfig-controlplane"), madeApart("apart-own", "mine"),
	} {
		if err := cons.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The provider's answer, as replication brings it back.
	slice.Status.Resources = slice.Spec.Resources.DeepCopy()
	slice.Status.NodeSelector = map[string]string{"node-role.example.com/offload": "true"}
	slice.Status.Conditions = []authv1beta1.ResourceSliceCondition{
		{Type: "Authentication", Status: "Accepted", LastTransitionTime: metav1.Now()},
		{Type: "Resources", Status: "Accepted", LastTransitionTime: metav1.Now()}}
	if err := cons.Client.Status().Update(ctx, slice); err != nil {
		t.Fatal(err)
	}

	node := &corev1.Node{}
	name := "cl-provider-test"
	vn := &offv1beta1.VirtualNode{}
	testenv.Eventually(t, "a NotReady virtual node on the control-plane identity", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, vn) == nil && vn.Spec.KubeconfigSecretRef != nil &&
			vn.Spec.KubeconfigSecretRef.Name == "kubeconfig-controlplane" &&
			cons.Client.Get(ctx, client.ObjectKey{Name: name}, node) == nil && nodeReady(node) == corev1.ConditionFalse
	})
	giveSliceIdentity(t, cons.Client, slice, kc)
	testenv.Eventually(t, "a Ready virtual node on the slice's identity", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, vn) == nil && vn.Spec.KubeconfigSecretRef.Name == "kubeconfig-resourceslice-test" &&
			cons.Client.Get(ctx, client.ObjectKey{Name: name}, node) == nil && nodeReady(node) == corev1.ConditionTrue
	})
	// A new kubeconfig in the same Secret (a renewed certificate) restarts the node with it.
	for i, want := range []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue} {
		data := map[bool][]byte{true: unreachable, false: kc}[i == 0]
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig-resourceslice-test"}}
		if err := cons.Client.Patch(ctx, secret, client.RawPatch(types.MergePatchType,
			fmt.Appendf(nil, `{"data":{%q:%q}}`, consts.KubeconfigSecretKey, base64.StdEncoding.EncodeToString(data)))); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the node "+string(want)+" with the Secret's new kubeconfig", 30*time.Second, func(ctx context.Context) bool {
			return cons.Client.Get(ctx, client.ObjectKey{Name: name}, node) == nil && nodeReady(node) == want
		})
	}
	for apart, want := range map[string]string{"apart-default": "kubeconfig-resourceslice-test", "apart-own": "mine"} {
		testenv.Eventually(t, "virtual node "+apart+" on Secret "+want, 30*time.Second, func(ctx context.Context) bool {
			got := &offv1beta1.VirtualNode{}
			return cons.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: apart}, got) == nil && got.Spec.KubeconfigSecretRef.Name == want
		})
	}
	// The VirtualNode names its slice (upstream's label: liqoctl shows a virtual node's slice by it).
	if err := cons.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, vn); err != nil || vn.Labels[consts.ResourceSliceNameLabel] != "test" {
		t.Errorf("VirtualNode %s/%s: labels %v (%v), want %s=test", ns, name, vn.Labels, err, consts.ResourceSliceNameLabel)
	}
	// The slice's node selector becomes the offloading patch's, which the pod reflector applies.
	if p := vn.Spec.OffloadingPatch; p == nil || len(p.NodeSelector) != 1 || p.NodeSelector["node-role.example.com/offload"] != "true" {
		t.Errorf("VirtualNode offloadingPatch %+v, want the slice's nodeSelector", p)
	}
	if node.Labels[consts.TypeLabel] != consts.VirtualNodeType || node.Labels[consts.RemoteClusterIDLabel] != "cl-provider" {
		t.Errorf("node labels %v", node.Labels)
	}
	if node.Status.Capacity.Cpu().String() != "4" || node.Status.Allocatable.Memory().String() != "8Gi" {
		t.Errorf("node capacity %v allocatable %v, want the grant", node.Status.Capacity, node.Status.Allocatable)
	}
	if len(node.Spec.Taints) == 0 || node.Spec.Taints[0] != vnode.Taint {
		t.Errorf("node taints %v, want %v first", node.Spec.Taints, vnode.Taint)
	}
	// The heartbeat: the node's Lease, held by the node and owned by it, renewed every quarter
	// of its duration.
	lease := &coordinationv1.Lease{}
	testenv.Eventually(t, "the node's Lease", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: name}, lease) == nil && lease.Spec.RenewTime != nil
	})
	if h, d := ptr.Deref(lease.Spec.HolderIdentity, ""), ptr.Deref(lease.Spec.LeaseDurationSeconds, 0); h != name || d != 4 ||
		len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].Kind != "Node" || lease.OwnerReferences[0].UID != node.UID {
		t.Errorf("Lease held by %q for %ds, owners %v; want held by %s for 4s, owned by its Node", h, d, lease.OwnerReferences, name)
	}
	firstRenew := lease.Spec.RenewTime.Time
	testenv.Eventually(t, "the Lease renewed", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease) == nil && lease.Spec.RenewTime.After(firstRenew)
	})
	t.Logf("Lease renewed %v after its first renewal", lease.Spec.RenewTime.Sub(firstRenew).Round(time.Millisecond))

	if err := providerEnv.Stop(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the node NotReady with the provider gone", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Name: name}, node) == nil && nodeReady(node) == corev1.ConditionFalse
	})

	// A pod on the node: deleting the slice drains it before the node goes (here nobody
	// confirms the pod's deletion, the provider being gone, so the drain removes it after
	// its deadline plus DrainGrace).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "offloaded"},
		Spec: corev1.PodSpec{NodeName: name, TerminationGracePeriodSeconds: ptr.To[int64](2),
			Tolerations: []corev1.Toleration{{Key: vnode.Taint.Key, Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "c", Image: "x"}}}}
	if err := cons.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := cons.Client.Delete(ctx, slice); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the node cordoned and its pod evicted, the node still there", 30*time.Second, func(ctx context.Context) bool {
		p := &corev1.Pod{}
		return cons.Client.Get(ctx, client.ObjectKeyFromObject(pod), p) == nil && p.DeletionTimestamp != nil &&
			cons.Client.Get(ctx, client.ObjectKey{Name: name}, node) == nil && node.Spec.Unschedulable
	})
	testenv.Eventually(t, "the node gone with the slice", 30*time.Second, func(ctx context.Context) bool {
		return apierrors.IsNotFound(cons.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{}))
	})
	if err := cons.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the node went before its pod: %v", err)
	}
}

// unreachableKubeconfig is kc towards an API server that is not there.
func unreachableKubeconfig(t *testing.T, kc []byte) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://127.0.0.1:1"
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// madeApart is a VirtualNode made from slice "test" of cl-provider but not by it (as
// liqo_virtual_node makes them), without a Node, running with the kubeconfig Secret secret.
func madeApart(name, secret string) *offv1beta1.VirtualNode {
	vn := &offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-cl-provider", Name: name}}
	forge.MutateVirtualNode(vn, forge.VirtualNodeOptions{ProviderID: "cl-provider", ResourceSlice: "test", KubeconfigSecret: secret,
		Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}})
	return vn
}

// giveSliceIdentity makes the slice's Identity and its kubeconfig Secret (holding kc), as the
// identity controllers make them once the provider signed the slice's certificate.
func giveSliceIdentity(t *testing.T, c client.Client, slice *authv1beta1.ResourceSlice, kc []byte) {
	t.Helper()
	ctx := t.Context()
	id := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: slice.Namespace, Name: forge.ResourceSliceIdentityName(slice.Name)}}
	forge.MutateResourceSliceIdentity(id, slice)
	id.Spec.AuthParams = authv1beta1.AuthParams{APIServer: "https://provider.example", SignedCRT: []byte("signed")}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: slice.Namespace, Name: "kubeconfig-" + id.Name,
		Labels: map[string]string{consts.IdentityTypeLabel: string(authv1beta1.ResourceSliceIdentityType), consts.RemoteClusterIDLabel: "cl-provider"}},
		Data: map[string][]byte{consts.KubeconfigSecretKey: kc}}
	for _, o := range []client.Object{id, secret} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	id.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: secret.Name}
	if err := c.Status().Update(ctx, id); err != nil {
		t.Fatal(err)
	}
}
