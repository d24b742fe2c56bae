package e2e

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// marketDuration is how long TestMarket's first contract runs: long enough for the pods to be
// offloaded and metered (every 30 s, the managers' default), short enough to see it end.
const marketDuration = 150 * time.Second

// TestMarket: seed 004's advertisement and contract on the sandbox, as a user runs
// examples/market. An offer above the consumer's ceiling is refused at apply, no contract
// written; within it the contract is signed by both clusters (each copy's signatures verified
// with the two clusters' keys) and the provider grants what it says; the consumer's offloaded
// pods are metered and the accrued cost reaches the consumer (its copy, liqo_contract); the
// offers' prices are outputs; at its end the contract turns Expired and the slice is cordoned;
// a new duration, planned as an in-place change, renews it and lifts the cordon; destroy leaves no contract on either side.
func TestMarket(t *testing.T) {
	r := startSandbox(t, 2)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := os.ReadFile(filepath.Join(r.state, "logs", "provider-controller-manager.log"))
			for _, l := range strings.Split(string(logs), "\n") {
				if strings.Contains(strings.ToLower(l), "contract") {
					t.Log(l)
				}
			}
		}
	})
	ctx := t.Context()
	cons, prov := r.clients["consumer"], r.clients["provider"]
	cid, pid := r.clusterID(t, "consumer"), r.clusterID(t, "provider")
	args := func(vars ...string) []string {
		return r.tfArgs("market", append([]string{"consumer_kubeconfig=" + filepath.Join(r.state, "consumer.kubeconfig"),
			"provider_kubeconfig=" + filepath.Join(r.state, "provider.kubeconfig")}, vars...)...)
	}
	apply := func(vars ...string) []string { return append([]string{"apply", "-auto-approve"}, args(vars...)...) }
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			r.tf(t, "market", append([]string{"destroy", "-auto-approve"}, args()...)...)
		}
	})
	key := client.ObjectKey{Namespace: consts.TenantNamespace(pid), Name: pid}

	out, _, code := r.tf(t, "market", apply("max_cost_per_hour=0.05")...)
	if code == 0 || !strings.Contains(oneLine(out), "above the ceiling max_cost_per_hour = 0.05") {
		t.Fatalf("apply above the ceiling: exit %d, want the ceiling's refusal\n%s", code, out)
	}
	if err := cons.Get(ctx, key, &marketv1alpha1.Contract{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a contract after the refusal above the ceiling: %v", err)
	}

	r.mustTF(t, "market", apply(fmt.Sprintf("duration=%s", marketDuration))...)
	signed := expectSigned(t, cons, prov, cid, key)
	expectGranted(t, prov, cid, pid, signed)

	dep := offloadedWeb(t, cons, "market-demo")
	r.expectOnNode(t, cons, dep, r.virtualNodeOf(t, "consumer", "provider"), "on the offer")
	testenv.EventuallyOK(t, "the offloaded pods' cost accrued on the consumer's copy", 2*time.Minute, func() error {
		c, own, tenant := &marketv1alpha1.Contract{}, &marketv1alpha1.Contract{}, &marketv1alpha1.Contract{}
		if err := cons.Get(ctx, key, c); err != nil {
			return err
		}
		if err := positive(c.Status.AccruedCost, c.Status.ResourceSeconds[corev1.ResourceCPU]); err != nil {
			_ = prov.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ProviderContractName(cid, pid)}, own)
			_ = prov.Get(ctx, client.ObjectKey{Namespace: consts.TenantNamespace(cid), Name: pid}, tenant)
			return fmt.Errorf("%w: the consumer's copy has %q %v, the provider's own %q %v (last metered %v), the tenant copy %q",
				err, c.Status.AccruedCost, c.Status.ResourceSeconds, own.Status.AccruedCost, own.Status.ResourceSeconds,
				own.Status.LastMetered, tenant.Status.AccruedCost)
		}
		return nil
	})
	r.mustTF(t, "market", append([]string{"apply", "-refresh-only", "-auto-approve"}, args(fmt.Sprintf("duration=%s", marketDuration))...)...)
	outputs, _, code := terraformIn(t, filepath.Join(r.root, "examples", "market"), r.tfEnv, "output", "-no-color",
		"-state="+filepath.Join(r.state, "market.tfstate"), "-json", "contract")
	var shown struct {
		Phase       string `json:"phase"`
		AccruedCost string `json:"accrued_cost"`
	}
	if err := json.Unmarshal([]byte(outputs), &shown); code != 0 || err != nil || shown.Phase != "Signed" ||
		positive(marketv1alpha1.Decimal(strings.TrimSuffix(shown.AccruedCost, " EUR")), "1") != nil {
		t.Errorf("output contract after a refresh: exit %d, %v, %+v; want Signed with a positive cost in EUR\n%s", code, err, shown, outputs)
	}

	// The offers, read with the consumer's identity once it authenticated: the price a plan shows.
	offers, _, code := terraformIn(t, filepath.Join(r.root, "examples", "market"), r.tfEnv, "output", "-no-color",
		"-state="+filepath.Join(r.state, "market.tfstate"), "-json", "offers")
	if code != 0 || oneLine(offers) != `{"standard":"0.04 EUR"}` {
		t.Errorf("output offers: exit %d, %s; want the standard offer's CPU price, 0.04 EUR", code, offers)
	}

	expectExpired(t, cons, key, signed.Spec.Terms.End.Time)
	plan, _, code := r.tf(t, "market", append([]string{"plan", "-detailed-exitcode"}, args("duration=720h")...)...)
	if code != 2 || !strings.Contains(oneLine(plan), fmt.Sprintf(`~ duration = %q -> "720h"`, marketDuration)) || !strings.Contains(plan, "1 to change, 0 to destroy") {
		t.Errorf("plan of the renewal: exit %d, want the offer's duration changed in place\n%s", code, plan)
	}
	r.mustTF(t, "market", apply("duration=720h")...)
	renewed := expectSigned(t, cons, prov, cid, key)
	if !renewed.Spec.Terms.Start.Equal(&signed.Spec.Terms.Start) || renewed.Spec.Terms.End.Sub(renewed.Spec.Terms.Start.Time) != 720*time.Hour {
		t.Errorf("renewed terms run %s to %s, want the same start %s and 720h", renewed.Spec.Terms.Start, renewed.Spec.Terms.End, signed.Spec.Terms.Start)
	}
	testenv.EventuallyOK(t, "the renewal lifting the expiry cordon", time.Minute, func() error {
		s := &authv1beta1.ResourceSlice{}
		if err := cons.Get(ctx, key, s); err != nil {
			return err
		}
		if consts.CordonSet(s.Annotations, consts.ProviderCordonAnnotation) {
			return fmt.Errorf("slice annotations %v", s.Annotations)
		}
		return nil
	})

	if err := cons.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dep.Namespace}}); err != nil {
		t.Fatal(err)
	}
	r.mustTF(t, "market", append([]string{"destroy", "-auto-approve"}, args()...)...)
	destroyed = true
	for name, c := range map[string]client.Client{"consumer": cons, "provider": prov} {
		var left marketv1alpha1.ContractList
		if err := c.List(ctx, &left); err != nil || len(left.Items) > 0 {
			t.Errorf("contracts left on the %s after destroy: %d, %v", name, len(left.Items), err)
		}
	}
}

// expectSigned waits until the consumer's contract key is Signed for its current terms, and
// checks that the provider keeps the same terms in its own copy, both copies signed by both
// clusters with their keys. It returns the consumer's copy.
func expectSigned(t *testing.T, cons, prov client.Client, cid string, key client.ObjectKey) *marketv1alpha1.Contract {
	t.Helper()
	ctx := t.Context()
	consumerKey, err := signing.ReadClusterKey(ctx, cons, consts.LiqoNamespace)
	if err != nil {
		t.Fatal(err)
	}
	providerKey, err := signing.ReadClusterKey(ctx, prov, consts.LiqoNamespace)
	if err != nil {
		t.Fatal(err)
	}
	c, own := &marketv1alpha1.Contract{}, &marketv1alpha1.Contract{}
	testenv.EventuallyOK(t, "the contract signed by both, on both clusters", time.Minute, func() error {
		if err := cons.Get(ctx, key, c); err != nil {
			return err
		}
		if err := prov.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ProviderContractName(cid, key.Name)}, own); err != nil {
			return fmt.Errorf("the provider's own copy: %w", err)
		}
		for _, copy := range []*marketv1alpha1.Contract{c, own} {
			if copy.Status.Phase != marketv1alpha1.ContractSigned {
				return fmt.Errorf("contract %s/%s is %s: %s", copy.Namespace, copy.Name, copy.Status.Phase, copy.Status.Reason)
			}
			if err := contract.VerifyBoth(copy, consumerKey.Public, providerKey.Public); err != nil {
				return err
			}
		}
		if string(contract.Canonical(&c.Spec.Terms)) != string(contract.Canonical(&own.Spec.Terms)) {
			return fmt.Errorf("the provider's copy holds other terms")
		}
		return nil
	})
	return c
}

// expectGranted checks that the provider granted the consumer's slice exactly the contract's
// resources.
func expectGranted(t *testing.T, prov client.Client, cid, pid string, c *marketv1alpha1.Contract) {
	t.Helper()
	testenv.EventuallyOK(t, "the provider's grant following the contract", time.Minute, func() error {
		s := &authv1beta1.ResourceSlice{}
		if err := prov.Get(t.Context(), client.ObjectKey{Namespace: consts.TenantNamespace(cid), Name: pid}, s); err != nil {
			return err
		}
		if s.Annotations[consts.ContractAnnotation] != c.Name {
			return fmt.Errorf("the provider's copy of the slice names contract %q", s.Annotations[consts.ContractAnnotation])
		}
		for name, want := range c.Spec.Terms.Resources {
			if got := s.Status.Resources[name]; got.Cmp(want) != 0 {
				return fmt.Errorf("granted %v, want the contract's %v", s.Status.Resources, c.Spec.Terms.Resources)
			}
		}
		return nil
	})
}

// expectExpired waits past end for the consumer's contract key to turn Expired and its slice
// to be cordoned by the provider.
func expectExpired(t *testing.T, cons client.Client, key client.ObjectKey, end time.Time) {
	t.Helper()
	wait := time.Until(end) + time.Minute
	testenv.EventuallyOK(t, "the contract Expired at its end and the slice cordoned", wait, func() error {
		c, s := &marketv1alpha1.Contract{}, &authv1beta1.ResourceSlice{}
		if err := cons.Get(t.Context(), key, c); err != nil {
			return err
		}
		if err := cons.Get(t.Context(), key, s); err != nil {
			return err
		}
		if c.Status.Phase != marketv1alpha1.ContractExpired || !consts.CordonSet(s.Annotations, consts.ProviderCordonAnnotation) {
			return fmt.Errorf("contract %s, slice annotations %v", c.Status.Phase, s.Annotations)
		}
		return nil
	})
}

// offloadedWeb makes namespace ns on c offloaded (pods Remote) and, once its offloading is
// Ready, Deployment "web" of 2 replicas in it, each asking 100m CPU and 64Mi.
func offloadedWeb(t *testing.T, c client.Client, ns string) *appsv1.Deployment {
	t.Helper()
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	nso := &offv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consts.NamespaceOffloadingName},
		Spec: offv1beta1.NamespaceOffloadingSpec{NamespaceMappingStrategy: offv1beta1.DefaultNameMappingStrategyType,
			PodOffloadingStrategy: offv1beta1.RemotePodOffloadingStrategyType}}
	if err := c.Create(ctx, nso); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyOK(t, "namespace "+ns+" offloaded", time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(nso), nso); err != nil {
			return err
		}
		if nso.Status.OffloadingPhase != offv1beta1.ReadyOffloadingPhaseType {
			return fmt.Errorf("offloading phase %q", nso.Status.OffloadingPhase)
		}
		return nil
	})
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}}}}
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	return dep
}

// positive is nil when every decimal is above zero.
func positive(decimals ...marketv1alpha1.Decimal) error {
	for _, d := range decimals {
		v, ok := new(big.Rat).SetString(string(d))
		if !ok || v.Sign() <= 0 {
			return fmt.Errorf("%q is not a positive decimal", d)
		}
	}
	return nil
}
