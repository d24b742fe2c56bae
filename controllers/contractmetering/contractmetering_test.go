package contractmetering_test

import (
	"context"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/contractmetering"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/contracttest"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

const gi = 1 << 30

// TestMetering: a Signed contract's ShadowPods (those of its consumer's remote namespaces that
// come from its slice's virtual node) are metered every interval: resource-seconds are their
// requests times the seconds they ran, exactly, and the cost follows the prices (memory priced
// per Gi), on the provider's copy and the consumer's tenant copy; a deleted ShadowPod stops
// accruing, and nothing accrues past the contract's end. Other nodes' and other namespaces'
// ShadowPods are not metered. The gauges export the status. A contract signed in the second it
// starts is metered too.
func TestMetering(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider"})
	cl := env.Cluster("provider")
	c := cl.Client
	ctx := t.Context()
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		if err := (&contractmetering.Reconciler{Client: mgr.GetClient(), Interval: time.Second}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&contractmetering.Exporter{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})
	p := contracttest.NewProvider(t, c, "cl-prov")
	tenantNS := p.Consumer(t, "cl-a")
	const remote, other = "app-cl-a", "elsewhere"
	for ns, l := range map[string]map[string]string{remote: {consts.RemoteNamespaceLabel: "true", consts.RemoteClusterIDLabel: "cl-a"}, other: nil} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: l}}); err != nil {
			t.Fatal(err)
		}
	}
	node := consts.VirtualNodeName("cl-prov", "s1")
	a := shadowPod(t, c, remote, "a", node, "500m", "")
	b := shadowPod(t, c, remote, "b", node, "", "512Mi")
	shadowPod(t, c, remote, "other-node", consts.VirtualNodeName("cl-prov", "s2"), "4", "")
	shadowPod(t, c, other, "other-ns", node, "4", "")

	terms := p.Terms("cl-a", time.Now().Add(-time.Minute), time.Minute+7*time.Second, "0.05", "cpu", "2", "memory", "4Gi")
	terms.Prices[corev1.ResourceMemory] = marketv1alpha1.Price{Amount: "0.004", Per: ptr.To(resource.MustParse("1Gi"))}
	tenantCopy := &marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "s1"},
		Spec: marketv1alpha1.ContractSpec{Terms: terms}}
	if err := c.Create(ctx, tenantCopy); err != nil {
		t.Fatal(err)
	}
	p.Copy(t, "cl-a", "s1", terms, marketv1alpha1.ContractSigned, nil, nil)
	key := client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ProviderContractName("cl-a", "s1")}

	// Metered a few times: exactly the requests times the seconds each ran up to lastMetered.
	got := metered(t, c, key, func(m *marketv1alpha1.Contract) bool {
		return m.Status.LastMetered.Sub(b.CreationTimestamp.Time) >= 3*time.Second
	})
	at := got.Status.LastMetered.Time
	wantSeconds(t, got, corev1.ResourceCPU, 0.5*at.Sub(a.CreationTimestamp.Time).Seconds())
	wantSeconds(t, got, corev1.ResourceMemory, 512*(1<<20)*at.Sub(b.CreationTimestamp.Time).Seconds())
	wantCost(t, got)

	// b deleted: its memory-seconds stop growing.
	if err := c.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	got = metered(t, c, key, func(m *marketv1alpha1.Contract) bool { return m.Status.LastMetered.After(deleted.Add(time.Second)) })
	memory := got.Status.ResourceSeconds[corev1.ResourceMemory]
	if upTo := 512 * (1 << 20) * (deleted.Sub(b.CreationTimestamp.Time) + time.Second).Seconds(); parse(t, memory) > upTo {
		t.Errorf("memory-seconds %s after b's deletion, want at most %g", memory, upTo)
	}

	// Past the end: a's cpu-seconds stop at the end, the status stays.
	end := terms.End.Time
	got = metered(t, c, key, func(m *marketv1alpha1.Contract) bool { return !m.Status.LastMetered.Time.Before(end) })
	wantSeconds(t, got, corev1.ResourceCPU, 0.5*end.Sub(a.CreationTimestamp.Time).Seconds())
	wantSeconds(t, got, corev1.ResourceMemory, parse(t, memory))
	wantCost(t, got)
	time.Sleep(2 * time.Second)
	final := metered(t, c, key, func(*marketv1alpha1.Contract) bool { return true })
	if !final.Status.LastMetered.Equal(got.Status.LastMetered) || final.Status.AccruedCost != got.Status.AccruedCost {
		t.Errorf("metered past the end: %+v, then %+v", got.Status, final.Status)
	}

	// The consumer's copy in the tenant namespace holds the same, and the gauges export it.
	testenv.Eventually(t, "the tenant copy metered", 10*time.Second, func(ctx context.Context) bool {
		return c.Get(ctx, client.ObjectKeyFromObject(tenantCopy), tenantCopy) == nil && tenantCopy.Status.AccruedCost == final.Status.AccruedCost &&
			tenantCopy.Status.ResourceSeconds[corev1.ResourceCPU] == final.Status.ResourceSeconds[corev1.ResourceCPU]
	})
	testenv.Eventually(t, "the gauges exported", 10*time.Second, func(context.Context) bool {
		cost := testutil.ToFloat64(contractmetering.AccruedCost.WithLabelValues("cl-a", "cl-prov", "s1", "EUR"))
		cpu := testutil.ToFloat64(contractmetering.ResourceSeconds.WithLabelValues("cl-a", "cl-prov", "s1", "EUR", "cpu"))
		return math.Abs(cost-parse(t, final.Status.AccruedCost)) < 1e-9 && math.Abs(cpu-parse(t, final.Status.ResourceSeconds["cpu"])) < 1e-9
	})
	consumerSide(t, c, terms)

	// A contract signed in the second it starts (as a peering's is: its start is when the
	// consumer wrote it) is metered all the same: the first look, within that second, has
	// nothing to meter yet, and looks again.
	fresh := p.Terms("cl-a", time.Now(), time.Hour, "0.05", "cpu", "1")
	p.Copy(t, "cl-a", "s3", fresh, marketv1alpha1.ContractSigned, nil, nil)
	metered(t, c, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ProviderContractName("cl-a", "s3")},
		func(*marketv1alpha1.Contract) bool { return true })
}

// consumerSide: the exporter exports a consumer's own Contract (labelled
// consts.ReplicationLabel) from its replicated status, and drops its series once it is gone.
func consumerSide(t *testing.T, c client.Client, terms marketv1alpha1.ContractTerms) {
	ctx := t.Context()
	own := &marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: "mine",
		Labels: map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: "cl-prov"}},
		Spec: marketv1alpha1.ContractSpec{Terms: terms}}
	if err := c.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	own.Status = marketv1alpha1.ContractStatus{Phase: marketv1alpha1.ContractSigned, AccruedCost: "1.250000",
		ResourceSeconds: map[corev1.ResourceName]marketv1alpha1.Decimal{corev1.ResourceCPU: "90000.000000"}}
	if err := c.Status().Update(ctx, own); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the consumer's contract exported", 10*time.Second, func(context.Context) bool {
		return testutil.ToFloat64(contractmetering.AccruedCost.WithLabelValues("cl-a", "cl-prov", "mine", "EUR")) == 1.25 &&
			testutil.ToFloat64(contractmetering.ResourceSeconds.WithLabelValues("cl-a", "cl-prov", "mine", "EUR", "cpu")) == 90000
	})
	if err := c.Delete(ctx, own); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the deleted contract's series dropped", 10*time.Second, func(context.Context) bool {
		return testutil.CollectAndCount(contractmetering.AccruedCost) == 1 && testutil.CollectAndCount(contractmetering.ResourceSeconds) == 2
	})
}

// shadowPod creates a ShadowPod in ns from the virtual node node, requesting cpu and memory
// ("": none), and returns it as stored.
func shadowPod(t *testing.T, c client.Client, ns, name, node, cpu, memory string) *offv1beta1.ShadowPod {
	t.Helper()
	req := corev1.ResourceList{}
	if cpu != "" {
		req[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		req[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	sp := &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{consts.OriginNodeLabel: node, consts.OriginClusterIDLabel: "cl-a"}},
		Spec: offv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: req}}}}}}
	if err := c.Create(t.Context(), sp); err != nil {
		t.Fatal(err)
	}
	return sp
}

// metered waits until the provider's copy key was metered and ok accepts it.
func metered(t *testing.T, c client.Client, key client.ObjectKey, ok func(*marketv1alpha1.Contract) bool) *marketv1alpha1.Contract {
	t.Helper()
	got := &marketv1alpha1.Contract{}
	testenv.Eventually(t, "contract "+key.String()+" metered", 20*time.Second, func(ctx context.Context) bool {
		return c.Get(ctx, key, got) == nil && got.Status.LastMetered != nil && ok(got)
	})
	return got
}

func parse(t *testing.T, d marketv1alpha1.Decimal) float64 {
	t.Helper()
	r, ok := new(big.Rat).SetString(string(d))
	if !ok {
		t.Fatalf("%q is not a decimal", d)
	}
	f, _ := r.Float64()
	return f
}

// wantSeconds checks the contract's resource-seconds of name against want, to a millionth.
func wantSeconds(t *testing.T, c *marketv1alpha1.Contract, name corev1.ResourceName, want float64) {
	t.Helper()
	if got := parse(t, c.Status.ResourceSeconds[name]); math.Abs(got-want) > 1e-6 {
		t.Errorf("%s-seconds %s at %s, want %g", name, c.Status.ResourceSeconds[name], c.Status.LastMetered.UTC(), want)
	}
}

// wantCost checks the accrued cost against the prices: cpu at 0.05 per CPU and hour, memory at
// 0.004 per Gi and hour.
func wantCost(t *testing.T, c *marketv1alpha1.Contract) {
	t.Helper()
	want := parse(t, c.Status.ResourceSeconds["cpu"])/3600*0.05 + parse(t, c.Status.ResourceSeconds["memory"])/gi/3600*0.004
	if got := parse(t, c.Status.AccruedCost); math.Abs(got-want) > 2e-6 {
		t.Errorf("accrued cost %s, want %.6f", c.Status.AccruedCost, want)
	}
}
