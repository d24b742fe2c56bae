package negotiation_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/negotiation"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

func slice(ns, name, cpu string) *authv1beta1.ResourceSlice {
	consumer, provider := corev1beta1.ClusterID("cl-a"), corev1beta1.ClusterID("cl-prov")
	return &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: authv1beta1.ResourceSliceSpec{ConsumerClusterID: &consumer, ProviderClusterID: &provider,
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("2Gi")}}}
}

// decided waits until the slice's Resources condition is want, and returns the slice.
func decided(t *testing.T, c client.Client, s *authv1beta1.ResourceSlice, typ authv1beta1.ResourceSliceConditionType,
	want authv1beta1.ResourceSliceConditionStatus, reason string) *authv1beta1.ResourceSlice {
	t.Helper()
	got := &authv1beta1.ResourceSlice{}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			return false, err
		}
		for _, cd := range got.Status.Conditions {
			if cd.Type == typ && cd.Status == want && cd.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("slice %s: %s not %s/%s: %v (conditions %+v)", s.Name, typ, want, reason, err, got.Status.Conditions)
	}
	return got
}

// TestNegotiation: slices are granted up to half the nodes' allocatable, a slice above what is
// left is denied with the shortfall, a smaller re-request is granted; a granted slice asking for
// too much keeps its grant (reason GrantKept); a Cordoned tenant gets no new slice but keeps the
// old one, also when it asks for something else; a Drained tenant loses everything, and a slice
// without a tenant is denied. Then sliceCertificates, on the same cluster.
func TestNegotiation(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider", ControllerManager: true, Nodes: []testenv.NodeOptions{
		{Name: "n1", CPU: "4", Memory: "8Gi"}, {Name: "n2", CPU: "4", Memory: "8Gi"}}})
	cl := env.Cluster("provider")
	c := cl.Client
	ctx := t.Context()
	const validity = 10 * time.Minute // renewed a second after it is issued
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&negotiation.Reconciler{Client: mgr.GetClient(), Policy: negotiation.Policy{Percent: 50},
			APIServerURL: cl.Config.Host, CAData: cl.Config.CAData, CertificateValidity: validity, RenewBefore: validity - time.Second,
			MinRenewalInterval: time.Second}).SetupWithManager(mgr)
	})

	for _, ns := range []string{"t-a", "t-none", "t-own"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "t-a", Name: "cl-a"},
		Spec: authv1beta1.TenantSpec{ClusterID: "cl-a", TenantCondition: authv1beta1.TenantConditionActive}}
	if err := c.Create(ctx, tenant); err != nil {
		t.Fatal(err)
	}

	// This cluster's own request to another provider, granted there: it takes nothing from what
	// this cluster shares.
	own := slice("t-own", "own", "4")
	own.Labels = map[string]string{consts.ReplicationLabel: "true"}
	if err := c.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	own.Status.Resources = own.Spec.Resources.DeepCopy()
	own.Status.Conditions = []authv1beta1.ResourceSliceCondition{{Type: authv1beta1.ResourceSliceConditionTypeResources,
		Status: authv1beta1.ResourceSliceConditionAccepted, LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, own); err != nil {
		t.Fatal(err)
	}

	s1 := slice("t-a", "s1", "2")
	if err := c.Create(ctx, s1); err != nil {
		t.Fatal(err)
	}
	got := decided(t, c, s1, "Resources", "Accepted", negotiation.ReasonGranted)
	if got.Status.Resources.Cpu().String() != "2" || got.Status.Resources.Memory().String() != "2Gi" {
		t.Errorf("granted %v, want cpu 2 memory 2Gi", got.Status.Resources)
	}

	s2 := slice("t-a", "s2", "3")
	if err := c.Create(ctx, s2); err != nil {
		t.Fatal(err)
	}
	got = decided(t, c, s2, "Resources", "Denied", negotiation.ReasonInsufficient)
	if msg := got.Status.Conditions[1].Message; !strings.Contains(msg, "cpu: asked 3, available 2") {
		t.Errorf("denial says %q", msg)
	}
	got.Spec.Resources[corev1.ResourceCPU] = resource.MustParse("2")
	if err := c.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	decided(t, c, s2, "Resources", "Accepted", negotiation.ReasonGranted)

	// A granted slice asking for more than is left keeps its grant (its virtual node and pods
	// run on it); asking within it again, granted as before.
	askCPU := func(s *authv1beta1.ResourceSlice, cpu string) {
		t.Helper()
		cur := &authv1beta1.ResourceSlice{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Resources[corev1.ResourceCPU] = resource.MustParse(cpu)
		if err := c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	}
	askCPU(s2, "64")
	got = decided(t, c, s2, "Resources", "Accepted", consts.ResourceSliceGrantKept)
	if got.Status.Resources.Cpu().String() != "2" || !strings.Contains(got.Status.Conditions[1].Message, "cpu: asked 64, available 2") {
		t.Errorf("a granted slice asking for too much: granted %v, %q; want the grant in force (cpu 2) kept and the shortfall",
			got.Status.Resources, got.Status.Conditions[1].Message)
	}
	askCPU(s2, "2")
	decided(t, c, s2, "Resources", "Accepted", negotiation.ReasonGranted)

	tenant.Spec.TenantCondition = authv1beta1.TenantConditionCordoned
	if err := c.Update(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	s3 := slice("t-a", "s3", "100m")
	if err := c.Create(ctx, s3); err != nil {
		t.Fatal(err)
	}
	decided(t, c, s3, "Authentication", "Denied", negotiation.ReasonCordoned)
	decided(t, c, s1, "Resources", "Accepted", negotiation.ReasonGranted)
	// A Cordoned tenant's slice asking for something else keeps what it holds.
	askCPU(s1, "1")
	if got = decided(t, c, s1, "Resources", "Accepted", consts.ResourceSliceGrantKept); got.Status.Resources.Cpu().String() != "2" {
		t.Errorf("a Cordoned tenant's slice asking for less: granted %v, want the grant in force (cpu 2) kept", got.Status.Resources)
	}

	if err := c.Get(ctx, client.ObjectKeyFromObject(tenant), tenant); err != nil {
		t.Fatal(err)
	}
	tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
	if err := c.Update(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	got = decided(t, c, s1, "Authentication", "Denied", negotiation.ReasonDrained)
	if len(got.Status.Resources) != 0 {
		t.Errorf("drained tenant keeps %v", got.Status.Resources)
	}

	orphan := slice("t-none", "s4", "1")
	if err := c.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	decided(t, c, orphan, "Authentication", "Denied", negotiation.ReasonNoTenant)

	sliceCertificates(t, cl)
}

// TestFixedPolicy: a fixed policy shares exactly its amount, whatever the nodes.
func TestFixedPolicy(t *testing.T) {
	p := negotiation.Policy{Fixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}
	got, err := p.Shared(t.Context(), nil)
	if err != nil || got.Cpu().String() != "3" {
		t.Errorf("shared %v, %v; want cpu 3", got, err)
	}
}

// TestOtherClassLeftAlone: a slice of another class than the default is not decided (no
// condition, even when its tenant changes), so that the controller of its class can; once that
// one accepts it, what it granted counts against what the default class still has to give.
// A slice naming the default class explicitly is decided.
func TestOtherClassLeftAlone(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider", Nodes: []testenv.NodeOptions{
		{Name: "n1", CPU: "4", Memory: "8Gi"}, {Name: "n2", CPU: "4", Memory: "8Gi"}}})
	cl := env.Cluster("provider")
	c := cl.Client
	ctx := t.Context()
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&negotiation.Reconciler{Client: mgr.GetClient(), Policy: negotiation.Policy{Percent: 50}}).SetupWithManager(mgr)
	})
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t-a"}}); err != nil {
		t.Fatal(err)
	}
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "t-a", Name: "cl-a"},
		Spec: authv1beta1.TenantSpec{ClusterID: "cl-a", TenantCondition: authv1beta1.TenantConditionActive}}
	if err := c.Create(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	undecided := func(when string) {
		t.Helper()
		// Created (or changed) before a slice the controller has decided since: its turn came.
		for range 10 {
			got := &authv1beta1.ResourceSlice{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "t-a", Name: "gpu"}, got); err != nil {
				t.Fatal(err)
			}
			if len(got.Status.Conditions) != 0 || len(got.Status.Resources) != 0 {
				t.Fatalf("slice of class %q %s: status %+v, want none (left to its class's controller)", got.Spec.Class, when, got.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	gpu := slice("t-a", "gpu", "1")
	gpu.Spec.Class = "gpu"
	if err := c.Create(ctx, gpu); err != nil {
		t.Fatal(err)
	}
	def := slice("t-a", "def", "1")
	def.Spec.Class = authv1beta1.ResourceSliceClassDefault
	if err := c.Create(ctx, def); err != nil {
		t.Fatal(err)
	}
	decided(t, c, def, "Resources", "Accepted", negotiation.ReasonGranted)
	undecided("after a default slice was decided")

	// Its own controller accepts it, with 2 cpu (more than it asked: its business).
	if err := c.Get(ctx, client.ObjectKeyFromObject(gpu), gpu); err != nil {
		t.Fatal(err)
	}
	gpu.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	gpu.Status.Conditions = []authv1beta1.ResourceSliceCondition{
		{Type: authv1beta1.ResourceSliceConditionTypeAuthentication, Status: authv1beta1.ResourceSliceConditionAccepted, Reason: "GPUController", LastTransitionTime: metav1.Now()},
		{Type: authv1beta1.ResourceSliceConditionTypeResources, Status: authv1beta1.ResourceSliceConditionAccepted, Reason: "GPUController", LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, gpu); err != nil {
		t.Fatal(err)
	}
	// 4 cpu shared: 1 to def, 2 to gpu, 1 left.
	more := slice("t-a", "more", "2")
	if err := c.Create(ctx, more); err != nil {
		t.Fatal(err)
	}
	got := decided(t, c, more, "Resources", "Denied", negotiation.ReasonInsufficient)
	if msg := got.Status.Conditions[1].Message; !strings.Contains(msg, "cpu: asked 2, available 1") {
		t.Errorf("denial says %q, want the other class's grant subtracted (cpu: asked 2, available 1)", msg)
	}

	// A Drained tenant loses its default-class grants; the other class's decision is its
	// controller's, left as written.
	if err := c.Get(ctx, client.ObjectKeyFromObject(tenant), tenant); err != nil {
		t.Fatal(err)
	}
	tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
	if err := c.Update(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	decided(t, c, def, "Authentication", "Denied", negotiation.ReasonDrained)
	got = &authv1beta1.ResourceSlice{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(gpu), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 2 || got.Status.Conditions[0].Reason != "GPUController" || got.Status.Resources.Cpu().String() != "2" {
		t.Errorf("slice of class gpu after its tenant was drained: status %+v, want its controller's as written", got.Status)
	}
}
