package contract_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// start is the contracts' start in the tests.
var start = time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)

// sampleTerms are valid terms: 2 CPUs, 4Gi of memory and a GPU for a day.
func sampleTerms() *marketv1alpha1.ContractTerms {
	return &marketv1alpha1.ContractTerms{
		ConsumerClusterID: "cl-consumer",
		ProviderClusterID: "cl-provider",
		OfferName:         "gpu-small",
		OfferUID:          "0b3c7a1e-5d1f-4c57-9a43-2f8e1d6c0a11",
		OfferGeneration:   3,
		Resources: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("2"),
			corev1.ResourceMemory: resource.MustParse("4Gi"),
			"nvidia.com/gpu":      resource.MustParse("1"),
		},
		Prices: map[corev1.ResourceName]marketv1alpha1.Price{
			corev1.ResourceCPU:    {Amount: "0.04"},
			corev1.ResourceMemory: {Amount: "0.005", Per: ptr.To(resource.MustParse("1Gi"))},
			"nvidia.com/gpu":      {Amount: "1.2"},
		},
		Currency: "EUR",
		Start:    metav1.NewTime(start),
		End:      metav1.NewTime(start.Add(24 * time.Hour)),
	}
}

// golden is sampleTerms' canonical encoding: it changes only with a new encoding version.
const golden = "liqo-contract-v1\n" +
	`{"consumerClusterID":"cl-consumer","providerClusterID":"cl-provider","offerName":"gpu-small",` +
	`"offerUID":"0b3c7a1e-5d1f-4c57-9a43-2f8e1d6c0a11","offerGeneration":3,"currency":"EUR",` +
	`"start":"2026-11-29T11:00:00Z","end":"2026-11-30T11:00:00Z","resources":[` +
	`{"name":"cpu","amount":"2","price":"0.04","per":"1"},{"name":"memory","amount":"4294967296","price":"0.005","per":"1073741824"},` +
	`{"name":"nvidia.com/gpu","amount":"1","price":"1.2","per":"1"}]}`

// TestCanonicalGolden: the encoding of known terms is exactly the documented one.
func TestCanonicalGolden(t *testing.T) {
	if got := string(contract.Canonical(sampleTerms())); got != golden {
		t.Errorf("canonical encoding changed:\ngot  %s\nwant %s", got, golden)
	}
}

// TestCanonicalSameMeaningSameBytes: terms written differently (maps filled in another order,
// equivalent quantities and prices, times in another zone or with sub-second digits) encode
// identically.
func TestCanonicalSameMeaningSameBytes(t *testing.T) {
	want := contract.Canonical(sampleTerms())
	paris := time.FixedZone("CET", 3600)

	other := sampleTerms()
	other.Resources = corev1.ResourceList{}
	other.Prices = map[corev1.ResourceName]marketv1alpha1.Price{}
	other.Resources["nvidia.com/gpu"] = resource.MustParse("1000m")
	other.Prices["nvidia.com/gpu"] = marketv1alpha1.Price{Amount: "1.20"}
	other.Resources[corev1.ResourceMemory] = resource.MustParse("4294967296")
	other.Prices[corev1.ResourceMemory] = marketv1alpha1.Price{Amount: "00.0050", Per: ptr.To(resource.MustParse("1073741824"))}
	other.Resources[corev1.ResourceCPU] = resource.MustParse("2000m")
	other.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: "000.040"}
	other.Start = metav1.NewTime(start.In(paris).Add(999 * time.Millisecond))
	other.End = metav1.NewTime(start.Add(24 * time.Hour).In(paris))
	if got := contract.Canonical(other); !bytes.Equal(got, want) {
		t.Errorf("equivalent terms encode differently:\ngot  %s\nwant %s", got, want)
	}

	// Other spellings of the same amounts.
	for spelling, q := range map[string]string{"2e0": "2", "0.002k": "2", "2.000": "2"} {
		terms := sampleTerms()
		terms.Resources[corev1.ResourceCPU] = resource.MustParse(spelling)
		if got := contract.Canonical(terms); !bytes.Equal(got, want) {
			t.Errorf("cpu %s (= %s) encodes differently:\n%s", spelling, q, got)
		}
	}
	// Many encodings of the same terms, whose maps Go ranges over in random orders.
	for range 20 {
		if got := contract.Canonical(sampleTerms()); !bytes.Equal(got, want) {
			t.Fatalf("the encoding of the same terms varies:\n%s\n%s", got, want)
		}
	}
}

// TestCanonicalEveryFieldMatters: changing any field of the terms changes the bytes; every
// field of ContractTerms has a change below.
func TestCanonicalEveryFieldMatters(t *testing.T) {
	base := contract.Canonical(sampleTerms())
	changes := map[string]func(*marketv1alpha1.ContractTerms){
		"ConsumerClusterID": func(c *marketv1alpha1.ContractTerms) { c.ConsumerClusterID = "cl-other" },
		"ProviderClusterID": func(c *marketv1alpha1.ContractTerms) { c.ProviderClusterID = "cl-other" },
		"OfferName":         func(c *marketv1alpha1.ContractTerms) { c.OfferName = "gpu-large" },
		"OfferUID":          func(c *marketv1alpha1.ContractTerms) { c.OfferUID = "another" },
		"OfferGeneration":   func(c *marketv1alpha1.ContractTerms) { c.OfferGeneration = 4 },
		"Resources":         func(c *marketv1alpha1.ContractTerms) { c.Resources[corev1.ResourceCPU] = resource.MustParse("2001m") },
		"Prices": func(c *marketv1alpha1.ContractTerms) {
			c.Prices[corev1.ResourceMemory] = marketv1alpha1.Price{Amount: "0.0051", Per: ptr.To(resource.MustParse("1Gi"))}
		},
		"Currency": func(c *marketv1alpha1.ContractTerms) { c.Currency = "USD" },
		"Start":    func(c *marketv1alpha1.ContractTerms) { c.Start = metav1.NewTime(start.Add(time.Second)) },
		"End":      func(c *marketv1alpha1.ContractTerms) { c.End = metav1.NewTime(c.End.Add(-time.Second)) },
	}
	more := map[string]func(*marketv1alpha1.ContractTerms){
		"a resource more": func(c *marketv1alpha1.ContractTerms) { c.Resources[corev1.ResourcePods] = resource.MustParse("10") },
		"a resource less": func(c *marketv1alpha1.ContractTerms) { delete(c.Resources, "nvidia.com/gpu") },
		"a price less":    func(c *marketv1alpha1.ContractTerms) { delete(c.Prices, "nvidia.com/gpu") },
		"a price more": func(c *marketv1alpha1.ContractTerms) {
			c.Prices[corev1.ResourcePods] = marketv1alpha1.Price{Amount: "1"}
		},
		"a price not a decimal": func(c *marketv1alpha1.ContractTerms) {
			c.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: "4e-2"}
		},
		"amount to price":        func(c *marketv1alpha1.ContractTerms) { c.Resources[corev1.ResourceCPU] = resource.MustParse("40m") },
		"resource renamed":       func(c *marketv1alpha1.ContractTerms) { moveResource(c, "nvidia.com/gpu", "amd.com/gpu") },
		"offer UID to offerName": func(c *marketv1alpha1.ContractTerms) { c.OfferName, c.OfferUID = c.OfferUID, c.OfferName },
	}
	fields := reflect.TypeFor[marketv1alpha1.ContractTerms]()
	for i := range fields.NumField() {
		if _, ok := changes[fields.Field(i).Name]; !ok {
			t.Errorf("no change of field %s tested: add one", fields.Field(i).Name)
		}
	}
	seen := map[string]string{string(base): "the sample"}
	for _, set := range []map[string]func(*marketv1alpha1.ContractTerms){changes, more} {
		for name, change := range set {
			terms := sampleTerms()
			change(terms)
			got := string(contract.Canonical(terms))
			if prev, dup := seen[got]; dup {
				t.Errorf("%s encodes as %s does:\n%s", name, prev, got)
			}
			seen[got] = name
		}
	}
}

func moveResource(c *marketv1alpha1.ContractTerms, from, to corev1.ResourceName) {
	c.Resources[to], c.Prices[to] = c.Resources[from], c.Prices[from]
	delete(c.Resources, from)
	delete(c.Prices, from)
}

// keys returns two new key pairs: the consumer's and the provider's.
func keys(t *testing.T) (consumer, provider *signing.KeyPair) {
	t.Helper()
	consumer, err := signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	provider, err = signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return consumer, provider
}

// TestSignVerify: a signature verifies with the signer's key, for terms of the same meaning; not
// for changed terms, nor with another key; a missing one is ErrUnsigned; invalid terms are not
// signed.
func TestSignVerify(t *testing.T) {
	key, other := keys(t)
	terms := sampleTerms()
	sig, err := contract.Sign(terms, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.Verify(terms, sig, key.Public); err != nil {
		t.Errorf("verifying the signature just made: %v", err)
	}
	same := sampleTerms()
	same.Resources[corev1.ResourceCPU] = resource.MustParse("2000m")
	same.Start = metav1.NewTime(start.Add(300 * time.Millisecond))
	if err := contract.Verify(same, sig, key.Public); err != nil {
		t.Errorf("verifying for terms of the same meaning: %v", err)
	}

	tampered := sampleTerms()
	tampered.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: "0.03"}
	if err := contract.Verify(tampered, sig, key.Public); !errors.Is(err, contract.ErrBadSignature) {
		t.Errorf("tampered price: got %v, want ErrBadSignature", err)
	}
	tampered = sampleTerms()
	tampered.End = metav1.NewTime(tampered.End.Add(time.Hour))
	if err := contract.Verify(tampered, sig, key.Public); !errors.Is(err, contract.ErrBadSignature) {
		t.Errorf("tampered end: got %v, want ErrBadSignature", err)
	}
	if err := contract.Verify(terms, sig, other.Public); !errors.Is(err, contract.ErrBadSignature) {
		t.Errorf("another key: got %v, want ErrBadSignature", err)
	}
	if err := contract.Verify(terms, nil, key.Public); !errors.Is(err, contract.ErrUnsigned) {
		t.Errorf("no signature: got %v, want ErrUnsigned", err)
	}
	if err := contract.Verify(terms, sig, nil); err == nil || !strings.Contains(err.Error(), "public key has 0 bytes") {
		t.Errorf("no public key: got %v, want an error about the key", err)
	}

	invalid := sampleTerms()
	invalid.Currency = "EURO"
	if _, err := contract.Sign(invalid, key); err == nil || !strings.Contains(err.Error(), "spec.terms.currency") {
		t.Errorf("signing invalid terms: got %v, want the problem with spec.terms.currency", err)
	}
	if _, err := contract.Sign(terms, &signing.KeyPair{}); err == nil {
		t.Error("signing without a private key succeeded")
	}
}

// TestSignatureOfPEMKeys: the keys as the clusters keep them (the authentication-keys Secret's
// PKCS #8 PEM, a Tenant's spec.publicKey PEM) sign and verify.
func TestSignatureOfPEMKeys(t *testing.T) {
	key, _ := keys(t)
	privPEM, err := key.EncodePrivate()
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := key.EncodePublic()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := signing.ParsePrivate(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signing.ParseTenantKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := contract.Sign(sampleTerms(), loaded)
	if err != nil {
		t.Fatal(err)
	}
	if err := contract.Verify(sampleTerms(), sig, pub); err != nil {
		t.Errorf("verifying with the Tenant's public key: %v", err)
	}
}

// TestVerifyBoth: the error names each signature that fails, its party and cluster.
func TestVerifyBoth(t *testing.T) {
	consumer, provider := keys(t)
	c := &marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-cl-consumer", Name: "gpu"}}
	c.Spec.Terms = *sampleTerms()
	var err error
	if c.Spec.ConsumerSignature, err = contract.Sign(&c.Spec.Terms, consumer); err != nil {
		t.Fatal(err)
	}
	if c.Status.ProviderSignature, err = contract.Sign(&c.Spec.Terms, provider); err != nil {
		t.Fatal(err)
	}
	if err := contract.VerifyBoth(c, consumer.Public, provider.Public); err != nil {
		t.Fatalf("both signatures: %v", err)
	}

	cases := []struct {
		name                 string
		change               func(*marketv1alpha1.Contract)
		consumerPub, provPub []byte
		want, notWant        []string
	}{
		{"consumer signed with another key", func(c *marketv1alpha1.Contract) { c.Spec.ConsumerSignature = c.Status.ProviderSignature },
			consumer.Public, provider.Public,
			[]string{"spec.consumerSignature (consumer cl-consumer)", "does not verify", "liqo-tenant-cl-consumer/gpu"}, []string{"providerSignature"}},
		{"provider unsigned", func(c *marketv1alpha1.Contract) { c.Status.ProviderSignature = nil },
			consumer.Public, provider.Public, []string{"status.providerSignature (provider cl-provider): no signature"}, []string{"consumerSignature"}},
		{"keys swapped", func(*marketv1alpha1.Contract) {}, provider.Public, consumer.Public,
			[]string{"spec.consumerSignature", "status.providerSignature"}, nil},
		{"terms changed after signing", func(c *marketv1alpha1.Contract) { c.Spec.Terms.Resources[corev1.ResourceCPU] = resource.MustParse("3") },
			consumer.Public, provider.Public, []string{"spec.consumerSignature", "status.providerSignature"}, nil},
	}
	for _, tc := range cases {
		cc := c.DeepCopy()
		tc.change(cc)
		err := contract.VerifyBoth(cc, tc.consumerPub, tc.provPub)
		if err == nil {
			t.Errorf("%s: verified", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
		for _, nw := range tc.notWant {
			if strings.Contains(err.Error(), nw) {
				t.Errorf("%s: error %q names %q, which verifies", tc.name, err, nw)
			}
		}
	}
}

// TestCheckTerms: invalid terms are refused with a message naming the field and the fix; valid
// ones (a free resource included) pass.
func TestCheckTerms(t *testing.T) {
	free := sampleTerms()
	free.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: "0"}
	for _, ok := range []*marketv1alpha1.ContractTerms{sampleTerms(), free} {
		if err := contract.CheckTerms(ok); err != nil {
			t.Errorf("valid terms refused: %v", err)
		}
	}
	type change = func(*marketv1alpha1.ContractTerms)
	cases := []struct {
		name   string
		change change
		want   []string
	}{
		{"end before start", func(c *marketv1alpha1.ContractTerms) { c.End = metav1.NewTime(start.Add(-time.Hour)) },
			[]string{"spec.terms.end 2026-11-29T10:00:00Z is not after spec.terms.start 2026-11-29T11:00:00Z", "set an end"}},
		{"end within the start's second", func(c *marketv1alpha1.ContractTerms) { c.End = metav1.NewTime(start.Add(500 * time.Millisecond)) },
			[]string{"spec.terms.end", "is not after spec.terms.start"}},
		{"no start", func(c *marketv1alpha1.ContractTerms) { c.Start = metav1.Time{} }, []string{"spec.terms.start is not set"}},
		{"no end", func(c *marketv1alpha1.ContractTerms) { c.End = metav1.Time{} }, []string{"spec.terms.end is not set"}},
		{"zero amount", func(c *marketv1alpha1.ContractTerms) { c.Resources[corev1.ResourceCPU] = resource.MustParse("0") },
			[]string{"spec.terms.resources[cpu] is 0: contract an amount above zero"}},
		{"negative amount", func(c *marketv1alpha1.ContractTerms) { c.Resources[corev1.ResourceMemory] = resource.MustParse("-1Gi") },
			[]string{"spec.terms.resources[memory] is -1Gi"}},
		{"no resources", func(c *marketv1alpha1.ContractTerms) { c.Resources, c.Prices = nil, nil },
			[]string{"spec.terms.resources is empty: name at least one resource"}},
		{"currency lower-case", func(c *marketv1alpha1.ContractTerms) { c.Currency = "eur" },
			[]string{`spec.terms.currency "eur" is not an ISO 4217 currency code: write three upper-case letters`}},
		{"currency unknown", func(c *marketv1alpha1.ContractTerms) { c.Currency = "ABC" }, []string{`spec.terms.currency "ABC"`}},
		{"currency a symbol", func(c *marketv1alpha1.ContractTerms) { c.Currency = "€" }, []string{`spec.terms.currency "€"`}},
		{"no currency", func(c *marketv1alpha1.ContractTerms) { c.Currency = "" }, []string{"spec.terms.currency is empty"}},
		{"price negative", func(c *marketv1alpha1.ContractTerms) {
			c.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: "-0.04"}
		},
			[]string{"spec.terms.prices[cpu].amount is negative (-0.04): write a price of 0 or more"}},
		{"price with an exponent", func(c *marketv1alpha1.ContractTerms) {
			c.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: "4e-2"}
		},
			[]string{`spec.terms.prices[cpu].amount "4e-2" is not a decimal number`}},
		{"price with a currency", func(c *marketv1alpha1.ContractTerms) {
			c.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: "0.04 EUR"}
		},
			[]string{`spec.terms.prices[cpu].amount "0.04 EUR" is not a decimal number`}},
		{"price empty", func(c *marketv1alpha1.ContractTerms) { c.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: ""} },
			[]string{`spec.terms.prices[cpu].amount "" is not a decimal number`}},
		{"price too long", func(c *marketv1alpha1.ContractTerms) {
			c.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: "0." + strings.Repeat("1", 70)}
		},
			[]string{"spec.terms.prices[cpu].amount has 72 characters"}},
		{"price missing", func(c *marketv1alpha1.ContractTerms) { delete(c.Prices, corev1.ResourceMemory) },
			[]string{"spec.terms.prices[memory] is missing: set its price"}},
		{"price without resource", func(c *marketv1alpha1.ContractTerms) {
			c.Prices[corev1.ResourcePods] = marketv1alpha1.Price{Amount: "0.001"}
		},
			[]string{"spec.terms.prices[pods] prices a resource not in spec.terms.resources"}},
		{"bad resource name", func(c *marketv1alpha1.ContractTerms) { moveResource(c, corev1.ResourceCPU, "c p u") },
			[]string{`resource name "c p u" is not a resource name`}},
		{"same cluster", func(c *marketv1alpha1.ContractTerms) { c.ProviderClusterID = c.ConsumerClusterID },
			[]string{`spec.terms.consumerClusterID and providerClusterID are both "cl-consumer"`}},
		{"no consumer", func(c *marketv1alpha1.ContractTerms) { c.ConsumerClusterID = "" },
			[]string{"spec.terms.consumerClusterID is empty: set the consumer's cluster ID"}},
		{"bad provider ID", func(c *marketv1alpha1.ContractTerms) { c.ProviderClusterID = "Cl_Provider" },
			[]string{`spec.terms.providerClusterID "Cl_Provider" is not a cluster ID`}},
		{"no offer", func(c *marketv1alpha1.ContractTerms) { c.OfferName = "" }, []string{"spec.terms.offerName is empty: name the provider's offer"}},
		{"bad offer name", func(c *marketv1alpha1.ContractTerms) { c.OfferName = "GPU Small" }, []string{`spec.terms.offerName "GPU Small" is not an object name`}},
		{"negative generation", func(c *marketv1alpha1.ContractTerms) { c.OfferGeneration = -1 }, []string{"spec.terms.offerGeneration is -1"}},
		{"two problems", func(c *marketv1alpha1.ContractTerms) {
			c.Currency, c.Prices[corev1.ResourceCPU] = "", marketv1alpha1.Price{Amount: "x"}
		},
			[]string{"spec.terms.currency is empty", `; spec.terms.prices[cpu].amount "x"`}},
	}
	for _, tc := range cases {
		terms := sampleTerms()
		tc.change(terms)
		err := contract.CheckTerms(terms)
		var invalid *contract.InvalidTermsError
		if !errors.As(err, &invalid) {
			t.Errorf("%s: got %v, want an *InvalidTermsError", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
}
