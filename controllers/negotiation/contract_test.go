package negotiation_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/negotiation"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/contracttest"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestContractGrant: a slice naming a contract is decided by the provider's own copy of it,
// whatever the Policy: Signed and running, granted exactly its resources (above the Policy, and
// whatever the slice asks); a copy missing, Refused, countersigned by another key, or for
// another consumer, denied ContractNotSigned; past its end, the grant is kept and the slice
// cordoned (consts.ContractExpiredAnnotation, which the grant webhook's cordon reads), until a
// renewal removes the cordon.
func TestContractGrant(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider"})
	cl := env.Cluster("provider")
	c := cl.Client
	ctx := t.Context()
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&negotiation.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Policy: negotiation.Policy{Fixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}).SetupWithManager(mgr)
	})
	p := contracttest.NewProvider(t, c, "cl-prov")
	ns := p.Consumer(t, "cl-a")
	p.Consumer(t, "cl-b")
	now := time.Now()
	terms := p.Terms("cl-a", now.Add(-time.Minute), time.Hour, "0.05", "cpu", "4", "memory", "8Gi")
	p.Copy(t, "cl-a", "good", terms, marketv1alpha1.ContractSigned, nil, nil)
	p.Copy(t, "cl-a", "refused", terms, marketv1alpha1.ContractRefused, nil, nil)
	p.Copy(t, "cl-a", "forged", terms, marketv1alpha1.ContractSigned, nil, contracttest.NewKey(t))
	p.Copy(t, "cl-b", "theirs", p.Terms("cl-b", now.Add(-time.Minute), time.Hour, "0.05", "cpu", "4"), marketv1alpha1.ContractSigned, nil, nil)
	// cl-a's name, but terms for cl-b signed by cl-b: not cl-a's contract.
	p.Copy(t, "cl-a", "swapped", p.Terms("cl-b", now.Add(-time.Minute), time.Hour, "0.05", "cpu", "4"), marketv1alpha1.ContractSigned,
		p.Consumers["cl-b"], nil)

	named := func(name, contractName, cpu string) *authv1beta1.ResourceSlice {
		s := slice(ns, name, cpu)
		s.Annotations = map[string]string{consts.ContractAnnotation: contractName}
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	got := decided(t, c, named("good", "good", "8"), "Resources", "Accepted", negotiation.ReasonGranted)
	if !equalLists(got.Status.Resources, terms.Resources) || !strings.Contains(got.Status.Conditions[1].Message, "cpu: asked 8, contracted 4") {
		t.Errorf("a slice asking 8 CPUs under a contract of 4 (Policy: 1): granted %v (%q), want exactly the contract's %v",
			got.Status.Resources, got.Status.Conditions[1].Message, terms.Resources)
	}
	for _, d := range []struct{ slice, contract, why string }{
		{"missing", "none", "has not accepted it"},
		{"refused", "refused", `phase "Refused"`},
		{"forged", "forged", "status.providerSignature"},
		{"theirs", "theirs", "has not accepted it"},
		{"swapped", "swapped", "is for consumer cl-b, not cl-a"},
	} {
		got := decided(t, c, named(d.slice, d.contract, "1"), "Resources", "Denied", negotiation.ReasonContractNotSigned)
		if len(got.Status.Resources) != 0 || !strings.Contains(got.Status.Conditions[1].Message, d.why) {
			t.Errorf("slice %s (contract %s): granted %v, %q; want nothing, saying %q", d.slice, d.contract, got.Status.Resources,
				got.Status.Conditions[1].Message, d.why)
		}
	}
	expiry(t, p, named("short", "short", "4"), ns)
}

// expiry: a slice whose contract ends keeps its grant, cordoned, until the contract is renewed;
// halfway through the renewal (new terms, their countersignature not yet written) nothing moves.
func expiry(t *testing.T, p *contracttest.Provider, s *authv1beta1.ResourceSlice, ns string) {
	c := p.Client
	terms := p.Terms("cl-a", time.Now().Add(-time.Minute), time.Minute+4*time.Second, "0.05", "cpu", "2")
	p.Copy(t, "cl-a", "short", terms, marketv1alpha1.ContractSigned, nil, nil)
	got := decided(t, c, s, "Resources", "Accepted", negotiation.ReasonGranted)
	if _, cordoned := got.Annotations[consts.ContractExpiredAnnotation]; cordoned {
		t.Errorf("a running contract's slice is cordoned: %v", got.Annotations)
	}
	got = decided(t, c, s, "Resources", "Accepted", negotiation.ReasonContractExpired)
	if !equalLists(got.Status.Resources, terms.Resources) {
		t.Errorf("expired: granted %v, want the contract's %v kept", got.Status.Resources, terms.Resources)
	}
	testenv.Eventually(t, "the expired contract's slice cordoned", 10*time.Second, func(ctx context.Context) bool {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "short"}, got) == nil &&
			slices.Contains(consts.SliceCordonedBy(got.Annotations), consts.ContractExpiredAnnotation) && consts.ProviderCordoned(got.Annotations)
	})
	renewed := p.Terms("cl-a", terms.Start.Time, time.Hour, "0.05", "cpu", "2")
	// Halfway through the renewal (the provider's copy holds the new terms, not yet their
	// countersignature): the grant in force and the cordon stay.
	half := &marketv1alpha1.Contract{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ProviderContractName("cl-a", "short")}, half); err != nil {
		t.Fatal(err)
	}
	half.Spec = marketv1alpha1.ContractSpec{Terms: renewed, ConsumerSignature: contracttest.Sign(t, &renewed, p.Consumers["cl-a"])}
	if err := c.Update(t.Context(), half); err != nil {
		t.Fatal(err)
	}
	got = decided(t, c, s, "Resources", "Accepted", consts.ResourceSliceGrantKept)
	if !equalLists(got.Status.Resources, terms.Resources) || !consts.ProviderCordoned(got.Annotations) {
		t.Errorf("halfway through the renewal: granted %v, annotations %v; want the grant kept, cordoned", got.Status.Resources, got.Annotations)
	}
	p.Copy(t, "cl-a", "short", renewed, marketv1alpha1.ContractSigned, nil, nil)
	decided(t, c, s, "Resources", "Accepted", negotiation.ReasonGranted)
	testenv.Eventually(t, "the renewed contract's slice uncordoned", 10*time.Second, func(ctx context.Context) bool {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "short"}, got) == nil && len(consts.SliceCordonedBy(got.Annotations)) == 0
	})
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if o, ok := b[k]; !ok || o.Cmp(q) != 0 {
			return false
		}
	}
	return true
}
