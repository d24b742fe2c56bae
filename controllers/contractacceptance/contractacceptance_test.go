package contractacceptance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/peerkit/terraform-provider-liqo/controllers/contractacceptance"
	"github.com/peerkit/terraform-provider-liqo/controllers/contractsigning"
	"github.com/peerkit/terraform-provider-liqo/controllers/replication"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

const wait = 30 * time.Second

// terms are the consumer's terms on offer: cpu CPUs at 0.05 EUR, from a minute ago for d.
func terms(offer, cpu string, d time.Duration) marketv1alpha1.ContractTerms {
	now := time.Now().Truncate(time.Second)
	return marketv1alpha1.ContractTerms{ConsumerClusterID: consumerID, ProviderClusterID: providerID, OfferName: offer,
		Resources: corev1.ResourceList{"cpu": resource.MustParse(cpu)},
		Prices:    map[corev1.ResourceName]marketv1alpha1.Price{"cpu": {Amount: "0.05"}}, Currency: "EUR",
		Start: metav1.NewTime(now.Add(-time.Minute)), End: metav1.NewTime(now.Add(d))}
}

// signed is a Contract name in the consumer's tenant namespace on the provider, with terms
// signed by key.
func signed(t *testing.T, name string, terms marketv1alpha1.ContractTerms, key *signing.KeyPair) *marketv1alpha1.Contract {
	t.Helper()
	sig, err := contract.Sign(&terms, key)
	if err != nil {
		t.Fatal(err)
	}
	return &marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: provNS, Name: name},
		Spec: marketv1alpha1.ContractSpec{Terms: terms, ConsumerSignature: sig}}
}

// waitPhase waits until the Contract at key has phase (and, when not "", a reason containing
// reason), and returns it.
func waitPhase(t *testing.T, c client.Client, key client.ObjectKey, phase marketv1alpha1.ContractPhase, reason string) *marketv1alpha1.Contract {
	t.Helper()
	got := &marketv1alpha1.Contract{}
	testenv.EventuallyOK(t, fmt.Sprintf("Contract %s %s", key, phase), wait, func() error {
		if err := c.Get(context.Background(), key, got); err != nil {
			return err
		}
		if got.Status.Phase != phase || !strings.Contains(got.Status.Reason, reason) {
			return fmt.Errorf("phase %q reason %q, want %s with %q", got.Status.Phase, got.Status.Reason, phase, reason)
		}
		return nil
	})
	return got
}

// ownKey is the key of the provider's copy of the consumer's Contract name.
func ownKey(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ProviderContractName(consumerID, name)}
}

// keys are the consumer's and the provider's keys.
func keys(t *testing.T, env *testenv.Env) (consumer, provider *signing.KeyPair) {
	t.Helper()
	consumer, err := signing.ReadClusterKey(t.Context(), env.Cluster("consumer").Client, consts.LiqoNamespace)
	if err != nil {
		t.Fatal(err)
	}
	provider, err = signing.ReadClusterKey(t.Context(), env.Cluster("provider").Client, consts.LiqoNamespace)
	if err != nil {
		t.Fatal(err)
	}
	return consumer, provider
}

// startFlow runs the consumer's signing and replication and the provider's acceptance.
func startFlow(t *testing.T, env *testenv.Env) {
	t.Helper()
	testenv.StartManager(t, env.Cluster("consumer"), func(mgr manager.Manager) error {
		if err := (&contractsigning.Reconciler{Client: mgr.GetClient(), ClusterID: consumerID,
			Recorder: mgr.GetEventRecorder("contract-signing")}).SetupWithManager(mgr); err != nil {
			return err
		}
		return replication.NewContractReconciler(mgr.GetClient(), consumerID).SetupWithManager(mgr)
	})
	testenv.StartManager(t, env.Cluster("provider"), func(mgr manager.Manager) error {
		return (&contractacceptance.Reconciler{Client: mgr.GetClient(), ClusterID: providerID,
			Recorder: mgr.GetEventRecorder("contract-acceptance")}).SetupWithManager(mgr)
	})
}

// TestContractFlow: a contract the consumer writes is signed by its controller manager,
// replicated, checked and countersigned by the provider, which keeps its own copy, and the
// consumer's copy shows Signed with a countersignature that verifies; a renewal is signed again
// by both; hostile contracts are refused, each with the reason, and no copy made; a tampered
// change of a running contract leaves it running; a withdrawn offer does not end a contract;
// the end expires both copies, and the provider's goes with the consumer's; a running one goes
// at unpeering.
func TestContractFlow(t *testing.T) {
	env := pair.Env(t)
	cons, prov := env.Cluster("consumer").Client, env.Cluster("provider").Client
	consKey, provKey := keys(t, env)
	startFlow(t, env)

	t.Run("signed by both", func(t *testing.T) {
		testSignedByBoth(t, cons, prov, consKey, provKey)
	})
	t.Run("consumer does not sign", func(t *testing.T) {
		testNotSigned(t, cons, prov)
	})
	asConsumer := env.Cluster("provider").UserClient(t, consumerID, consts.ConsumerGroup)
	t.Run("hostile contracts refused", func(t *testing.T) {
		testHostile(t, prov, asConsumer, consKey)
	})
	t.Run("running contract kept", func(t *testing.T) {
		testRunningKept(t, prov, asConsumer, consKey)
	})
	t.Run("expiry", func(t *testing.T) {
		testExpiry(t, prov, asConsumer, consKey)
	})
	t.Run("unpeering", func(t *testing.T) { // last: it deletes the consumer's Tenant
		testUnpeering(t, prov, asConsumer, consKey)
	})
}

// testUnpeering: the consumer deleting its copy of a running contract does not end it; its
// Tenant going (unpeering) deletes the provider's copy.
func testUnpeering(t *testing.T, prov, asConsumer client.Client, consKey *signing.KeyPair) {
	ctx := t.Context()
	c := signed(t, "unpeer", terms("short", "1", time.Hour), consKey)
	if err := asConsumer.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, prov, client.ObjectKeyFromObject(c), marketv1alpha1.ContractSigned, "")
	if err := asConsumer.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the controller's turn
	waitPhase(t, prov, ownKey("unpeer"), marketv1alpha1.ContractSigned, "")
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: provNS, Name: consumerID}}
	if err := prov.Delete(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the provider's copy deleted at unpeering", wait, func(ctx context.Context) bool {
		return apierrors.IsNotFound(prov.Get(ctx, ownKey("unpeer"), &marketv1alpha1.Contract{}))
	})
}

// testSignedByBoth: the happy path, through both clusters, and a renewal.
func testSignedByBoth(t *testing.T, cons, prov client.Client, consKey, provKey *signing.KeyPair) {
	ctx := t.Context()
	mine := &marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "happy",
		Labels: map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: providerID}},
		Spec: marketv1alpha1.ContractSpec{Terms: terms("small", "2", time.Hour)}}
	mine.Spec.Terms.Resources["memory"] = resource.MustParse("2Gi")
	gi := resource.MustParse("1Gi")
	mine.Spec.Terms.Prices["memory"] = marketv1alpha1.Price{Amount: "0.010", Per: &gi}
	if err := cons.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	got := waitPhase(t, cons, client.ObjectKeyFromObject(mine), marketv1alpha1.ContractSigned, "")
	if err := contract.VerifyBoth(got, consKey.Public, provKey.Public); err != nil {
		t.Errorf("the consumer's copy: %v", err)
	}
	own := waitPhase(t, prov, ownKey("happy"), marketv1alpha1.ContractSigned, "")
	if err := contract.VerifyBoth(own, consKey.Public, provKey.Public); err != nil {
		t.Errorf("the provider's copy: %v", err)
	}
	if own.Labels[consts.ContractConsumerLabel] != consumerID || own.Labels[consts.ContractNameLabel] != "happy" {
		t.Errorf("the provider's copy's labels: %v", own.Labels)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, contractacceptance.ConditionAccepted); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the consumer's copy's Accepted condition: %+v", c)
	}

	// Renewal in place: a new end, signed again by the consumer, countersigned again.
	end := metav1.NewTime(got.Spec.Terms.End.Add(time.Hour))
	got.Spec.Terms.End = end
	if err := cons.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyOK(t, "the renewal countersigned on both sides", wait, func() error {
		for _, c := range []struct {
			cl  client.Client
			key client.ObjectKey
		}{{cons, client.ObjectKeyFromObject(mine)}, {prov, ownKey("happy")}} {
			x := &marketv1alpha1.Contract{}
			if err := c.cl.Get(ctx, c.key, x); err != nil {
				return err
			}
			if !x.Spec.Terms.End.Equal(&end) || x.Status.Phase != marketv1alpha1.ContractSigned {
				return fmt.Errorf("%s: end %s phase %s", c.key, x.Spec.Terms.End, x.Status.Phase)
			}
			if err := contract.VerifyBoth(x, consKey.Public, provKey.Public); err != nil {
				return err
			}
		}
		return nil
	})
	// Settled: nothing is written any more on either side (no flapping).
	versions := func() []string {
		var out []string
		for _, k := range []struct {
			cl  client.Client
			key client.ObjectKey
		}{{cons, client.ObjectKeyFromObject(mine)}, {prov, client.ObjectKey{Namespace: provNS, Name: "happy"}}, {prov, ownKey("happy")}} {
			x := &marketv1alpha1.Contract{}
			if err := k.cl.Get(ctx, k.key, x); err != nil {
				t.Fatal(err)
			}
			out = append(out, x.ResourceVersion)
		}
		return out
	}
	before := versions()
	time.Sleep(2 * time.Second)
	if after := versions(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("resource versions (consumer's, tenant copy, provider's copy) went from %v to %v with nothing changed", before, after)
	}
	// Only signed terms reached the provider: it never refused them on the way.
	events := &eventsv1.EventList{}
	if err := prov.List(ctx, events, client.InNamespace(provNS)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Regarding.Name == "happy" && e.Reason == contractacceptance.ReasonRefused {
			t.Errorf("the provider refused the consumer's terms on the way: %s", e.Note)
		}
	}
}

// testNotSigned: the consumer's controller manager does not sign terms naming another consumer,
// nor invalid ones: a Warning Event says why, and the unsigned terms do not go to the provider.
func testNotSigned(t *testing.T, cons, prov client.Client) {
	for name, f := range map[string]func(*marketv1alpha1.ContractTerms){
		"unsigned-other": func(x *marketv1alpha1.ContractTerms) { x.ConsumerClusterID = "cl-other" },
		"unsigned-xyz":   func(x *marketv1alpha1.ContractTerms) { x.Currency = "XYZ" }, // the CRD's pattern lets it through
	} {
		mine := &marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: name,
			Labels: map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: providerID}},
			Spec: marketv1alpha1.ContractSpec{Terms: terms("small", "1", time.Hour)}}
		f(&mine.Spec.Terms)
		if err := cons.Create(t.Context(), mine); err != nil {
			t.Fatal(err)
		}
		testenv.ExpectEvent(t, cons, mine, contractsigning.ReasonNotSigned, wait)
		time.Sleep(time.Second) // the replicator's turn
		if err := prov.Get(t.Context(), client.ObjectKey{Namespace: provNS, Name: name}, &marketv1alpha1.Contract{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the copy on the provider: %v, want none (the terms are not signed)", name, err)
		}
		got := &marketv1alpha1.Contract{}
		if err := cons.Get(t.Context(), client.ObjectKeyFromObject(mine), got); err != nil || len(got.Spec.ConsumerSignature) > 0 {
			t.Errorf("%s: %v, signature %x, want unsigned", name, err, got.Spec.ConsumerSignature)
		}
	}
}

// testHostile: contracts the consumer's identity writes itself on the provider, refused each
// with its reason, and no provider's copy made.
func testHostile(t *testing.T, prov, asConsumer client.Client, consKey *signing.KeyPair) {
	other, err := signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	change := func(offer, cpu string, f func(*marketv1alpha1.ContractTerms)) marketv1alpha1.ContractTerms {
		x := terms(offer, cpu, time.Hour)
		if f != nil {
			f(&x)
		}
		return x
	}
	for _, tc := range []struct {
		name, reason string
		c            *marketv1alpha1.Contract
	}{
		{"over-max", "spec.terms.resources[cpu]: 4 is above the 3 the offer allows", signed(t, "over-max", terms("small", "4", time.Hour), consKey)},
		{"over-offer", "spec.terms.resources[cpu] 3 with the 2 of the contracts running on Offer small is above the 4 it offers",
			signed(t, "over-offer", terms("small", "3", time.Hour), consKey)},
		{"price", "spec.terms.prices[cpu]: 0.01 per 1 is not the offer's 0.05 per 1", signed(t, "price", change("small", "1", func(x *marketv1alpha1.ContractTerms) {
			x.Prices["cpu"] = marketv1alpha1.Price{Amount: "0.01"}
		}), consKey)},
		{"currency", `spec.terms.currency "USD" is not the offer's "EUR"`, signed(t, "currency", change("small", "1", func(x *marketv1alpha1.ContractTerms) {
			x.Currency = "USD"
		}), consKey)},
		{"not-made-to", `the provider makes no Offer "private" to consumer cl-consumer`, signed(t, "not-made-to", terms("private", "1", time.Hour), consKey)},
		{"other-consumer", `spec.terms.consumerClusterID "cl-other" is not the consumer of namespace`, signed(t, "other-consumer",
			change("small", "1", func(x *marketv1alpha1.ContractTerms) { x.ConsumerClusterID = "cl-other" }), consKey)},
		{"forged", "spec.consumerSignature does not verify", signed(t, "forged", terms("small", "1", time.Hour), other)},
	} {
		if err := asConsumer.Create(t.Context(), tc.c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		waitPhase(t, prov, client.ObjectKeyFromObject(tc.c), marketv1alpha1.ContractRefused, tc.reason)
		if err := prov.Get(t.Context(), ownKey(tc.name), &marketv1alpha1.Contract{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the provider's copy: %v, want none", tc.name, err)
		}
	}
	testenv.ExpectEvent(t, prov, signed(t, "forged", terms("small", "1", time.Hour), other), contractacceptance.ReasonRefused, wait)
}

// testRunningKept: a tampered change of a Signed contract is refused and the provider keeps the
// signed terms; an offer withdrawn while a contract runs does not end it.
func testRunningKept(t *testing.T, prov, asConsumer client.Client, consKey *signing.KeyPair) {
	ctx := t.Context()
	c := signed(t, "kept", terms("withdrawn", "1", time.Hour), consKey)
	if err := asConsumer.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c = waitPhase(t, prov, client.ObjectKeyFromObject(c), marketv1alpha1.ContractSigned, "")
	c.Spec.Terms.Resources["cpu"] = resource.MustParse("2") // the signature is the old terms'
	if err := asConsumer.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	c = waitPhase(t, prov, client.ObjectKeyFromObject(c), marketv1alpha1.ContractRefused, "spec.consumerSignature does not verify")
	if k := meta.FindStatusCondition(c.Status.Conditions, contractacceptance.ConditionRunningTermsKept); k == nil || k.Status != metav1.ConditionTrue {
		t.Errorf("RunningTermsKept condition: %+v", k)
	}
	own := waitPhase(t, prov, ownKey("kept"), marketv1alpha1.ContractSigned, "")
	if q := own.Spec.Terms.Resources["cpu"]; q.String() != "1" {
		t.Errorf("the provider's copy's cpu: %s, want the signed 1", q.String())
	}

	withdrawn := &marketv1alpha1.Offer{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: "withdrawn"}}
	if err := prov.Delete(ctx, withdrawn); err != nil {
		t.Fatal(err)
	}
	// The signed terms again: they still run, the offer gone.
	c.Spec.Terms.Resources["cpu"] = resource.MustParse("1")
	if err := asConsumer.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, prov, client.ObjectKeyFromObject(c), marketv1alpha1.ContractSigned, "")
	waitPhase(t, prov, ownKey("kept"), marketv1alpha1.ContractSigned, "")
}

// testExpiry: at its end a contract is Expired on both copies; the consumer deleting its copy
// then deletes the provider's.
func testExpiry(t *testing.T, prov, asConsumer client.Client, consKey *signing.KeyPair) {
	c := signed(t, "short", terms("short", "1", 6*time.Second), consKey)
	if err := asConsumer.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, prov, client.ObjectKeyFromObject(c), marketv1alpha1.ContractExpired, "")
	waitPhase(t, prov, ownKey("short"), marketv1alpha1.ContractExpired, "")
	if err := asConsumer.Delete(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the provider's copy of the expired contract deleted", wait, func(ctx context.Context) bool {
		return apierrors.IsNotFound(prov.Get(ctx, ownKey("short"), &marketv1alpha1.Contract{}))
	})
}

// TestConsumerContractRights: with peerrbac.ControlPlaneRules, the consumer's identity writes
// Contracts in its tenant namespace but not their status (the provider's countersignature), and
// touches no Contract of another namespace.
func TestConsumerContractRights(t *testing.T) {
	env := pair.Env(t)
	ctx := t.Context()
	asConsumer := env.Cluster("provider").UserClient(t, consumerID, consts.ConsumerGroup)
	consKey, _ := keys(t, env)
	c := signed(t, "rights", terms("small", "1", time.Hour), consKey)
	if err := asConsumer.Create(ctx, c); err != nil {
		t.Fatalf("the consumer creates its Contract: %v", err)
	}
	c.Status = marketv1alpha1.ContractStatus{Phase: marketv1alpha1.ContractSigned, ProviderSignature: []byte("forged")}
	elsewhere := signed(t, "elsewhere", terms("small", "1", time.Hour), consKey)
	elsewhere.Namespace = otherNS
	list := &marketv1alpha1.ContractList{}
	for what, err := range map[string]error{
		"write the status of its Contract":        asConsumer.Status().Update(ctx, c),
		"create a Contract in another namespace":  asConsumer.Create(ctx, elsewhere),
		"list the Contracts of another namespace": asConsumer.List(ctx, list, client.InNamespace(otherNS)),
		"read the provider's copies":              asConsumer.List(ctx, list, client.InNamespace(consts.LiqoNamespace)),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the consumer may %s: %v, want forbidden", what, err)
		}
	}
	if err := asConsumer.Delete(ctx, c); err != nil {
		t.Errorf("the consumer deletes its Contract: %v", err)
	}
}
