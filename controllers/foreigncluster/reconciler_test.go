package foreigncluster_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/foreigncluster"
	tenantctrl "github.com/peerkit/terraform-provider-liqo/controllers/tenant"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// startCluster starts a cluster and runs the reconciler against it until the test ends.
func startCluster(t *testing.T) *testenv.Cluster {
	t.Helper()
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"})
	cl := env.Cluster("a")
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&foreigncluster.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})
	return cl
}

// eventually polls cond for up to 30 s.
func eventually(t *testing.T, what string, cond func(fc *corev1beta1.ForeignCluster, err error) bool, c client.Client, name string) {
	t.Helper()
	last := &corev1beta1.ForeignCluster{}
	var lastErr error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		fc := &corev1beta1.ForeignCluster{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, fc)
		if err == nil || apierrors.IsNotFound(err) { // not a read cut short by the deadline
			last, lastErr = fc, err
		}
		return cond(fc, err), nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last read: %v, status %+v)", what, err, lastErr, last.Status)
	}
}

func condition(m corev1beta1.Module, t corev1beta1.ConditionType) corev1beta1.ConditionStatusType {
	return conditionOf(m, t).Status
}

func conditionOf(m corev1beta1.Module, t corev1beta1.ConditionType) corev1beta1.Condition {
	for _, c := range m.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1beta1.Condition{}
}

// TestForeignClusterFollowsThePeering: the ForeignCluster appears with the first object about the
// remote cluster, its role and module conditions follow the objects, `kubectl get
// foreignclusters` shows NAME, ROLE and AGE, and it goes away with the last object.
func TestForeignClusterFollowsThePeering(t *testing.T) {
	cl := startCluster(t)
	c := cl.Client
	ctx := t.Context()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-cl-b",
		Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-b", consts.TenantNamespaceLabel: "true"}}}
	// A Tenant whose signature is not its key's signature of the nonce is refused: the
	// condition says so, with the Tenant reconciler's reason and the field at fault.
	key, err := signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	nonceSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: consts.NonceSecret, Namespace: ns.Name,
		Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-b"}}, Data: map[string][]byte{consts.NonceKey: []byte("the-nonce")}}
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "cl-b", Namespace: ns.Name},
		Spec: authv1beta1.TenantSpec{ClusterID: "cl-b", TenantCondition: authv1beta1.TenantConditionActive,
			PublicKey: key.Public, Signature: key.Sign([]byte("another-nonce"))}}
	for _, o := range []client.Object{ns, nonceSecret, tenant} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "ForeignCluster for a refused consumer", func(fc *corev1beta1.ForeignCluster, err error) bool {
		cond := conditionOf(fc.Status.Modules.Authentication, corev1beta1.AuthTenantStatusCondition)
		return err == nil && fc.Spec.ClusterID == "cl-b" && fc.Status.Role == corev1beta1.ConsumerRole &&
			cond.Status == corev1beta1.ConditionStatusError && cond.Reason == tenantctrl.ReasonSignatureInvalid &&
			strings.Contains(cond.Message, "spec.signature")
	}, c, "cl-b")

	tenant.Spec.Signature = key.Sign([]byte("the-nonce"))
	if err := c.Update(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	eventually(t, "ForeignCluster for a consumer", func(fc *corev1beta1.ForeignCluster, err error) bool {
		return err == nil && fc.Spec.ClusterID == "cl-b" && fc.Status.Role == corev1beta1.ConsumerRole &&
			fc.Status.TenantNamespace.Local == ns.Name && fc.Status.Modules.Authentication.Enabled &&
			condition(fc.Status.Modules.Authentication, corev1beta1.AuthTenantStatusCondition) == corev1beta1.ConditionStatusEstablished
	}, c, "cl-b")

	identity := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Name: "controlplane", Namespace: ns.Name},
		Spec: authv1beta1.IdentitySpec{ClusterID: "cl-b", Type: "ControlPlane", Namespace: "liqo-tenant-cl-a",
			AuthParams: authv1beta1.AuthParams{APIServer: "https://203.0.113.7:6443"}}}
	conn := &netv1beta1.Connection{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: ns.Name, Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-b"}},
		Spec: netv1beta1.ConnectionSpec{Type: "Client", GatewayRef: corev1.ObjectReference{Kind: "GatewayClient", Name: "client"}}}
	for _, o := range []client.Object{identity, conn} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	conn.Status.Value = netv1beta1.Connected
	conn.Status.Latency.Value = "0.5ms"
	if err := c.Status().Update(ctx, conn); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both directions and networking", func(fc *corev1beta1.ForeignCluster, err error) bool {
		return err == nil && fc.Status.Role == corev1beta1.ConsumerAndProviderRole &&
			fc.Status.TenantNamespace.Remote == "liqo-tenant-cl-a" && fc.Status.APIServerURL == "https://203.0.113.7:6443" &&
			condition(fc.Status.Modules.Networking, corev1beta1.NetworkConnectionStatusCondition) == corev1beta1.ConditionStatusEstablished &&
			conditionOf(fc.Status.Modules.Networking, corev1beta1.NetworkConnectionStatusCondition).Message == "tunnel Connected"
	}, c, "cl-b")
	// A new latency measurement is no change of the peering: the ForeignCluster is not rewritten
	// (it holds no measurement, so plans that read it stay quiet).
	before := &corev1beta1.ForeignCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: "cl-b"}, before); err != nil {
		t.Fatal(err)
	}
	conn.Status.Latency.Value = "0.9ms"
	if err := c.Status().Update(ctx, conn); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the reconciler answers a Connection change within milliseconds
	after := &corev1beta1.ForeignCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: "cl-b"}, after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the ForeignCluster was rewritten for a new latency: conditions %+v", after.Status.Modules.Networking.Conditions)
	}

	binDir, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(binDir, "kubectl"), "--kubeconfig", cl.KubeconfigPath, "--cache-dir", t.TempDir(),
		"get", "foreignclusters").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get foreignclusters: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !regexp.MustCompile(`^NAME\s+ROLE\s+AGE$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^cl-b\s+ConsumerAndProvider\s+\d+s$`).MatchString(lines[1]) {
		t.Errorf("kubectl get foreignclusters printed:\n%s", out)
	}

	tenant.Spec.TenantCondition = authv1beta1.TenantConditionCordoned
	if err := c.Update(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cordoned tenant", func(fc *corev1beta1.ForeignCluster, err error) bool {
		return err == nil && condition(fc.Status.Modules.Authentication, corev1beta1.AuthTenantStatusCondition) == corev1beta1.ConditionStatusNotReady
	}, c, "cl-b")

	for _, o := range []client.Object{conn, identity, tenant} {
		if err := c.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "role back to Unknown with only the namespace left", func(fc *corev1beta1.ForeignCluster, err error) bool {
		return err == nil && fc.Status.Role == corev1beta1.UnknownRole
	}, c, "cl-b")
	if err := c.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// Without a namespace controller the namespace stays Terminating: it no longer counts.
	eventually(t, "ForeignCluster deleted with the last object", func(_ *corev1beta1.ForeignCluster, err error) bool {
		return apierrors.IsNotFound(err)
	}, c, "cl-b")
}

// TestForeignClusterFromAnyObject: an object other than a tenant namespace, alone, makes the
// ForeignCluster of the cluster it is about, whether its spec names the cluster or only its
// liqo.io/remote-cluster-id label does; the role follows what the object is, and the
// ForeignCluster goes with the object.
func TestForeignClusterFromAnyObject(t *testing.T) {
	cl := startCluster(t)
	c := cl.Client
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}); err != nil {
		t.Fatal(err)
	}
	labelled := func(id string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "plain", Name: "obj-" + id, Labels: map[string]string{consts.RemoteClusterIDLabel: id}}
	}
	for _, tc := range []struct {
		id   string
		obj  client.Object
		role corev1beta1.RoleType
	}{
		// An Identity whose spec names no cluster, only its label.
		{"cl-identity", &authv1beta1.Identity{ObjectMeta: labelled("cl-identity"), Spec: authv1beta1.IdentitySpec{Type: "ControlPlane"}},
			corev1beta1.ProviderRole},
		// A ResourceSlice as a consumer writes it before anything else: label, no cluster in spec.
		{"cl-slice", &authv1beta1.ResourceSlice{ObjectMeta: labelled("cl-slice"), Spec: authv1beta1.ResourceSliceSpec{Class: "default"}},
			corev1beta1.ProviderRole},
		// A ResourceSlice as replicated to a provider: label and spec name the consumer.
		{"cl-consumer", &authv1beta1.ResourceSlice{ObjectMeta: labelled("cl-consumer"),
			Spec: authv1beta1.ResourceSliceSpec{ConsumerClusterID: ptr(corev1beta1.ClusterID("cl-consumer"))}},
			corev1beta1.ConsumerRole},
		// A Tenant whose spec names no cluster.
		{"cl-tenant", &authv1beta1.Tenant{ObjectMeta: labelled("cl-tenant"), Spec: authv1beta1.TenantSpec{TenantCondition: authv1beta1.TenantConditionActive}},
			corev1beta1.ConsumerRole},
	} {
		if err := c.Create(ctx, tc.obj); err != nil {
			t.Fatal(err)
		}
		eventually(t, fmt.Sprintf("ForeignCluster from a lone %T about %s", tc.obj, tc.id),
			func(fc *corev1beta1.ForeignCluster, err error) bool {
				return err == nil && fc.Spec.ClusterID == corev1beta1.ClusterID(tc.id) && fc.Status.Role == tc.role &&
					fc.Status.Modules.Authentication.Enabled == (tc.id == "cl-identity" || tc.id == "cl-tenant")
			}, c, tc.id)
	}
	for _, id := range []string{"cl-identity", "cl-slice", "cl-tenant"} {
		var obj client.Object
		switch id {
		case "cl-identity":
			obj = &authv1beta1.Identity{}
		case "cl-tenant":
			obj = &authv1beta1.Tenant{}
		default:
			obj = &authv1beta1.ResourceSlice{}
		}
		obj.SetNamespace("plain")
		obj.SetName("obj-" + id)
		if err := c.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
		eventually(t, "ForeignCluster "+id+" deleted with its only object", func(_ *corev1beta1.ForeignCluster, err error) bool {
			return apierrors.IsNotFound(err)
		}, c, id)
	}
}

func ptr[T any](v T) *T { return &v }

// TestForeignClusterOffloadingConditions: on a consumer, the offloading module's conditions
// follow the virtual nodes of the provider as the peering progresses: a VirtualNode whose
// virtual kubelet does not run yet and whose Node is not registered is NotReady on both
// counts; the kubelet running makes OffloadingVirtualNodeStatus Ready; the Node registered
// NotReady, then Ready, makes OffloadingNodeStatus follow; a second virtual node not running
// makes both SomeNotReady; one that creates no Node does not count for the Nodes. On a
// provider, a granted slice enables the module.
func TestForeignClusterOffloadingConditions(t *testing.T) {
	cl := startCluster(t)
	c := cl.Client
	ctx := t.Context()
	const ns = "liqo-tenant-cl-p"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-p", consts.TenantNamespaceLabel: "true"}}}); err != nil {
		t.Fatal(err)
	}
	offloading := func(what string, vnStatus, nodeStatus corev1beta1.ConditionStatusType) {
		t.Helper()
		eventually(t, what, func(fc *corev1beta1.ForeignCluster, err error) bool {
			return err == nil && fc.Status.Role == corev1beta1.ProviderRole && fc.Status.Modules.Offloading.Enabled &&
				condition(fc.Status.Modules.Offloading, corev1beta1.OffloadingVirtualNodeStatusCondition) == vnStatus &&
				condition(fc.Status.Modules.Offloading, corev1beta1.OffloadingNodeStatusCondition) == nodeStatus
		}, c, "cl-p")
	}
	setKubelet := func(vn *offv1beta1.VirtualNode, s offv1beta1.VirtualNodeConditionStatusType) {
		t.Helper()
		vn.Status.Conditions = []offv1beta1.VirtualNodeCondition{{Type: offv1beta1.VirtualKubeletConditionType, Status: s},
			{Type: offv1beta1.NodeConditionType, Status: s}}
		if err := c.Status().Update(ctx, vn); err != nil {
			t.Fatal(err)
		}
	}

	vn := &offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cl-p"}, Spec: offv1beta1.VirtualNodeSpec{ClusterID: "cl-p"}}
	if err := c.Create(ctx, vn); err != nil {
		t.Fatal(err)
	}
	offloading("a VirtualNode, nothing running", corev1beta1.ConditionStatusNotReady, corev1beta1.ConditionStatusNotReady)
	setKubelet(vn, offv1beta1.CreatingConditionStatusType)
	offloading("virtual kubelet creating", corev1beta1.ConditionStatusNotReady, corev1beta1.ConditionStatusNotReady)
	setKubelet(vn, offv1beta1.RunningConditionStatusType)
	offloading("virtual kubelet running, no Node", corev1beta1.ConditionStatusReady, corev1beta1.ConditionStatusNotReady)

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cl-p",
		Labels: map[string]string{consts.TypeLabel: consts.VirtualNodeType, consts.RemoteClusterIDLabel: "cl-p"}}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	setNodeReady := func(s corev1.ConditionStatus) {
		t.Helper()
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s, Reason: "Test"}}
		if err := c.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	setNodeReady(corev1.ConditionFalse)
	offloading("Node registered, not Ready", corev1beta1.ConditionStatusReady, corev1beta1.ConditionStatusNotReady)
	setNodeReady(corev1.ConditionTrue)
	offloading("Node Ready", corev1beta1.ConditionStatusReady, corev1beta1.ConditionStatusReady)

	vn2 := &offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cl-p-2"}, Spec: offv1beta1.VirtualNodeSpec{ClusterID: "cl-p"}}
	if err := c.Create(ctx, vn2); err != nil {
		t.Fatal(err)
	}
	offloading("a second virtual node, not running", corev1beta1.ConditionStatusSomeNotReady, corev1beta1.ConditionStatusSomeNotReady)
	vn2.Spec.CreateNode = ptr(false)
	if err := c.Update(ctx, vn2); err != nil {
		t.Fatal(err)
	}
	offloading("the second creates no Node", corev1beta1.ConditionStatusSomeNotReady, corev1beta1.ConditionStatusReady)
	setKubelet(vn2, offv1beta1.RunningConditionStatusType)
	offloading("both virtual kubelets running", corev1beta1.ConditionStatusReady, corev1beta1.ConditionStatusReady)
	setNodeReady(corev1.ConditionFalse)
	offloading("the provider unreachable: Node NotReady", corev1beta1.ConditionStatusReady, corev1beta1.ConditionStatusNotReady)

	// Provider side: the consumer's granted slice enables offloading, with no condition of
	// virtual nodes (they are on the consumer).
	consumer, provider := corev1beta1.ClusterID("cl-c"), corev1beta1.ClusterID("cl-local")
	slice := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "granted"},
		Spec: authv1beta1.ResourceSliceSpec{ConsumerClusterID: &consumer, ProviderClusterID: &provider}}
	if err := c.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a consumer's slice enables offloading", func(fc *corev1beta1.ForeignCluster, err error) bool {
		return err == nil && fc.Status.Role == corev1beta1.ConsumerRole && fc.Status.Modules.Offloading.Enabled &&
			len(fc.Status.Modules.Offloading.Conditions) == 0
	}, c, "cl-c")
}
