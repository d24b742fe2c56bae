package negotiation_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/negotiation"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/tethering"
)

// addNode creates a Node with cpu and memory allocatable (no kubelet: the API object only).
func addNode(t *testing.T, c client.Client, name, cpu, memory string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	n.Status.Capacity, n.Status.Allocatable = res, res
	if err := c.Status().Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

// tenantNamespace creates the tenant namespace of consumer id, with its Active Tenant.
func tenantNamespace(t *testing.T, c client.Client, id string) string {
	t.Helper()
	ns := "liqo-tenant-" + id
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: id}}},
		&authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id},
			Spec: authv1beta1.TenantSpec{ClusterID: corev1beta1.ClusterID(id), TenantCondition: authv1beta1.TenantConditionActive}},
	} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

// classSlice is a slice of class in namespace ns, of consumer, asking for cpu.
func classSlice(ns, name, consumer string, class authv1beta1.ResourceSliceClass, cpu string) *authv1beta1.ResourceSlice {
	cons, prov := corev1beta1.ClusterID(consumer), corev1beta1.ClusterID("cl-home")
	return &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: authv1beta1.ResourceSliceSpec{ConsumerClusterID: &cons, ProviderClusterID: &prov, Class: class,
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}
}

// TestTetheredSlices: on a cluster tethered to cl-foreign, cl-foreign's slice of the tethered
// class is granted everything available (the nodes' allocatable in full, whatever the Policy,
// minus a default slice's grant), whatever it asks, and follows the nodes; the same class from another consumer is denied
// (NotTethered), and so is a slice written in another consumer's namespace naming cl-foreign;
// the tethering ended, cl-foreign's is denied too. The default slice keeps its grant.
func TestTetheredSlices(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "home"})
	cl := env.Cluster("home")
	c := cl.Client
	ctx := t.Context()
	addNode(t, c, "n1", "4", "8Gi")
	foreignNS, otherNS := tenantNamespace(t, c, "cl-foreign"), tenantNamespace(t, c, "cl-other")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&negotiation.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Policy: negotiation.Policy{Percent: 50}}).SetupWithManager(mgr)
	})

	def := classSlice(otherNS, "default", "cl-other", "", "1")
	if err := c.Create(ctx, def); err != nil {
		t.Fatal(err)
	}
	decided(t, c, def, "Resources", "Accepted", negotiation.ReasonGranted)
	if err := c.Create(ctx, tethering.ConfigMap("", "cl-foreign")); err != nil {
		t.Fatal(err)
	}

	teth := classSlice(foreignNS, "tethered", "cl-foreign", consts.TetheredSliceClass, "100m")
	if err := c.Create(ctx, teth); err != nil {
		t.Fatal(err)
	}
	grantIs := func(cpu, memory string) {
		t.Helper()
		got := &authv1beta1.ResourceSlice{}
		testenv.Poll(t, "the tethered slice granted cpu "+cpu+" memory "+memory, 30*time.Second, func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(teth), got); err != nil {
				return false, err
			}
			return negotiation.Condition(got, "Resources") == "Accepted" &&
					got.Status.Resources.Cpu().String() == cpu && got.Status.Resources.Memory().String() == memory,
				fmt.Errorf("granted %v, conditions %+v", got.Status.Resources, got.Status.Conditions)
		})
		if msg := got.Status.Conditions[1].Message; !strings.Contains(msg, "tethered: everything this cluster shares") {
			t.Errorf("tethered grant says %q", msg)
		}
	}
	grantIs("3", "7Gi") // 4 CPUs and 8Gi (not the Policy's half), minus the default slice's 1 CPU and 1Gi
	addNode(t, c, "n2", "4", "8Gi")
	grantIs("7", "15Gi")

	// The class from another consumer; a slice in another consumer's namespace naming
	// cl-foreign (no Tenant of cl-foreign there).
	other := classSlice(otherNS, "tethered", "cl-other", consts.TetheredSliceClass, "100m")
	forged := classSlice(otherNS, "forged", "cl-foreign", consts.TetheredSliceClass, "100m")
	for _, s := range []*authv1beta1.ResourceSlice{other, forged} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	got := decided(t, c, other, "Resources", "Denied", negotiation.ReasonNotTethered)
	if msg := got.Status.Conditions[1].Message; !strings.Contains(msg, "tethered to cl-foreign, not to cl-other") || len(got.Status.Resources) > 0 {
		t.Errorf("the tethered class from cl-other: %q, granted %v", msg, got.Status.Resources)
	}
	decided(t, c, forged, "Resources", "Denied", negotiation.ReasonNotAuthorized)

	// The tethering ends.
	if err := c.Delete(ctx, tethering.ConfigMap("", "cl-foreign")); err != nil {
		t.Fatal(err)
	}
	got = decided(t, c, teth, "Resources", "Denied", negotiation.ReasonNotTethered)
	if len(got.Status.Resources) > 0 || !strings.Contains(got.Status.Conditions[1].Message, "not tethered") {
		t.Errorf("after the tethering: granted %v, %q", got.Status.Resources, got.Status.Conditions[1].Message)
	}
	got = decided(t, c, def, "Resources", "Accepted", negotiation.ReasonGranted)
	if got.Status.Resources.Cpu().String() != "1" {
		t.Errorf("the default slice's grant: %v, want cpu 1", got.Status.Resources)
	}
}
