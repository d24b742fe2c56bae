package foreigncluster_test

import (
	"context"
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
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/peerkit/terraform-provider-liqo/controllers/foreigncluster"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
)

// startManager runs the reconciler against the cluster until the test ends.
func startManager(t *testing.T, cl *testenv.Cluster) {
	t.Helper()
	mgr, err := ctrl.NewManager(cl.Config, ctrl.Options{Scheme: cl.Client.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&foreigncluster.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// eventually polls cond for up to 30 s.
func eventually(t *testing.T, what string, cond func(fc *corev1beta1.ForeignCluster, err error) bool, c client.Client, name string) {
	t.Helper()
	var last *corev1beta1.ForeignCluster
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		fc := &corev1beta1.ForeignCluster{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, fc)
		last = fc
		return cond(fc, err), nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last status %+v)", what, err, last.Status)
	}
}

func condition(m corev1beta1.Module, t corev1beta1.ConditionType) corev1beta1.ConditionStatusType {
	for _, c := range m.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// TestForeignClusterFollowsThePeering: the ForeignCluster appears with the first object about the
// remote cluster, its role and module conditions follow the objects, `kubectl get
// foreignclusters` shows NAME, ROLE and AGE, and it goes away with the last object.
func TestForeignClusterFollowsThePeering(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"})
	cl := env.Cluster("a")
	c := cl.Client
	ctx := t.Context()
	startManager(t, cl)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-cl-b",
		Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-b", consts.TenantNamespaceLabel: "true"}}}
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "cl-b", Namespace: ns.Name},
		Spec: authv1beta1.TenantSpec{ClusterID: "cl-b", TenantCondition: authv1beta1.TenantConditionActive}}
	for _, o := range []client.Object{ns, tenant} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
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
			condition(fc.Status.Modules.Networking, corev1beta1.NetworkConnectionStatusCondition) == corev1beta1.ConditionStatusEstablished
	}, c, "cl-b")

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
