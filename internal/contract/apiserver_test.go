package contract_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestContractThroughAPIServer: on a provider's API server, a Contract signed with the
// provider's key (its authentication-keys Secret) and the consumer's (whose public key its
// Tenant holds) reads back with both signatures verifying, its terms encoding as sent (times
// with sub-second digits and spellings such as 1000m included) and its status kept; the CRD
// rejects contracts missing required terms or with invalid ones, naming the field.
func TestContractThroughAPIServer(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider"})
	c := env.Clusters[0].Client
	ctx := t.Context()
	tenantNS := consts.TenantNamespace("cl-consumer")
	for _, ns := range []string{consts.LiqoNamespace, tenantNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	providerKey, consumerPub := clusterKeys(t, c, tenantNS)
	consumerKey := consumerPub.key

	terms := sampleTerms()
	terms.Resources[corev1.ResourceCPU] = resource.MustParse("2000m")
	terms.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: "0.040"}
	terms.Start = metav1.NewTime(time.Now().Add(123 * time.Millisecond))
	terms.End = metav1.NewTime(terms.Start.Add(24 * time.Hour))
	sent := &marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "gpu-small"},
		Spec: marketv1alpha1.ContractSpec{Terms: *terms}}
	var err error
	if sent.Spec.ConsumerSignature, err = contract.Sign(terms, consumerKey); err != nil {
		t.Fatal(err)
	}
	if sent.Status.ProviderSignature, err = contract.Sign(terms, providerKey); err != nil {
		t.Fatal(err)
	}
	created := sent.DeepCopy()
	if err := c.Create(ctx, created, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		t.Fatalf("creating the contract: %v", err)
	}
	// The provider's countersignature is its answer, in the status subresource.
	created.Status = *sent.Status.DeepCopy()
	if err := c.Status().Update(ctx, created, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		t.Fatalf("countersigning the contract in its status: %v", err)
	}

	got := &marketv1alpha1.Contract{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(sent), got); err != nil {
		t.Fatal(err)
	}
	if err := contract.VerifyBoth(got, consumerPub.pub, providerKey.Public); err != nil {
		t.Errorf("the contract read back does not verify: %v", err)
	}
	if a, b := contract.Canonical(&got.Spec.Terms), contract.Canonical(terms); !bytes.Equal(a, b) {
		t.Errorf("the terms read back encode differently:\ngot  %s\nsent %s", a, b)
	}
	checkStoredSignatures(t, c, sent)

	got.Status = marketv1alpha1.ContractStatus{Phase: marketv1alpha1.ContractSigned, AccruedCost: "0.35",
		LastMetered: &metav1.Time{Time: time.Now()}, ProviderSignature: got.Status.ProviderSignature}
	if err := c.Status().Update(ctx, got); err != nil {
		t.Fatalf("updating the status: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(sent), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != marketv1alpha1.ContractSigned || got.Status.AccruedCost != "0.35" || got.Status.LastMetered == nil {
		t.Errorf("status read back: %+v", got.Status)
	}
	if err := contract.VerifyBoth(got, consumerPub.pub, providerKey.Public); err != nil {
		t.Errorf("after the status update: %v", err)
	}

	t.Run("rejected", func(t *testing.T) { testRejected(t, c, tenantNS) })
}

// consumerKeys are the consumer's key pair and its public key as the provider reads it.
type consumerKeys struct {
	key *signing.KeyPair
	pub []byte
}

// clusterKeys writes the provider's signing key into its authentication-keys Secret and the
// consumer's public key into its Tenant, then reads them back as the provider's controllers do.
func clusterKeys(t *testing.T, c client.Client, tenantNS string) (*signing.KeyPair, consumerKeys) {
	t.Helper()
	ctx := t.Context()
	provider, consumer := keys(t)
	privPEM, err := provider.EncodePrivate()
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: consts.SigningKeySecret},
		Data: map[string][]byte{consts.PrivateKeySecretKey: privPEM}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	providerKey, err := signing.ReadClusterKey(ctx, c, consts.LiqoNamespace)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := consumer.EncodePublic()
	if err != nil {
		t.Fatal(err)
	}
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "cl-consumer"},
		Spec: authv1beta1.TenantSpec{ClusterID: "cl-consumer", PublicKey: pubPEM}}
	if err := c.Create(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(tenant), tenant); err != nil {
		t.Fatal(err)
	}
	pub, err := signing.ParseTenantKey(tenant.Spec.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return providerKey, consumerKeys{key: consumer, pub: pub}
}

// checkStoredSignatures checks that the API server keeps the signatures as base64 strings.
func checkStoredSignatures(t *testing.T, c client.Client, sent *marketv1alpha1.Contract) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(marketv1alpha1.GroupVersion.WithKind(marketv1alpha1.ContractKind))
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sent), u); err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string][]byte{"spec.consumerSignature": sent.Spec.ConsumerSignature, "status.providerSignature": sent.Status.ProviderSignature} {
		got, _, _ := unstructured.NestedString(u.Object, strings.Split(field, ".")...)
		if got != base64.StdEncoding.EncodeToString(want) {
			t.Errorf("stored %s = %q, want the base64 of the signature", field, got)
		}
	}
}

// price is a Price of amount per one unit, as unstructured content.
func price(amount string) map[string]any { return map[string]any{"amount": amount} }

// testRejected: contracts missing required terms, or with invalid ones, are refused by the API
// server with a message naming the field.
func testRejected(t *testing.T, c client.Client, ns string) {
	valid := func() map[string]any {
		return map[string]any{
			"consumerClusterID": "cl-consumer", "providerClusterID": "cl-provider", "offerName": "gpu-small",
			"resources": map[string]any{"cpu": "2"}, "prices": map[string]any{"cpu": price("0.04")}, "currency": "EUR",
			"start": "2026-11-29T11:00:00Z", "end": "2026-11-30T11:00:00Z",
		}
	}
	cases := []struct {
		name   string
		change func(terms map[string]any)
		want   string
	}{
		{"no consumer", func(m map[string]any) { delete(m, "consumerClusterID") }, "spec.terms.consumerClusterID: Required value"},
		{"no offer", func(m map[string]any) { delete(m, "offerName") }, "spec.terms.offerName: Required value"},
		{"no resources", func(m map[string]any) { delete(m, "resources") }, "spec.terms.resources: Required value"},
		{"no prices", func(m map[string]any) { delete(m, "prices") }, "spec.terms.prices: Required value"},
		{"no currency", func(m map[string]any) { delete(m, "currency") }, "spec.terms.currency: Required value"},
		{"no start", func(m map[string]any) { delete(m, "start") }, "spec.terms.start: Required value"},
		{"no end", func(m map[string]any) { delete(m, "end") }, "spec.terms.end: Required value"},
		{"end before start", func(m map[string]any) { m["end"] = "2026-11-29T10:00:00Z" }, "terms.end must be after terms.start"},
		{"negative price", func(m map[string]any) { m["prices"] = map[string]any{"cpu": price("-1")} }, "spec.terms.prices.cpu.amount in body should match"},
		{"lower-case currency", func(m map[string]any) { m["currency"] = "eur" }, "spec.terms.currency in body should match '^[A-Z]{3}$'"},
		{"unpriced resource", func(m map[string]any) { m["resources"] = map[string]any{"cpu": "2", "memory": "1Gi"} },
			"every resource in terms.resources needs its price in terms.prices"},
		{"price without resource", func(m map[string]any) { m["prices"] = map[string]any{"cpu": price("1"), "pods": price("1")} },
			"every price in terms.prices needs its resource in terms.resources"},
		{"empty resources", func(m map[string]any) { m["resources"], m["prices"] = map[string]any{}, map[string]any{} },
			"terms.resources must name at least one resource"},
		{"bad cluster ID", func(m map[string]any) { m["providerClusterID"] = "Cl_Provider" }, "spec.terms.providerClusterID in body should match"},
	}
	for i, tc := range cases {
		terms := valid()
		tc.change(terms)
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"terms": terms}}}
		u.SetGroupVersionKind(marketv1alpha1.GroupVersion.WithKind(marketv1alpha1.ContractKind))
		u.SetNamespace(ns)
		u.SetName("rejected-" + strings.Repeat("x", i+1))
		err := c.Create(t.Context(), u)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want Invalid saying %q", tc.name, err, tc.want)
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	u.SetGroupVersionKind(marketv1alpha1.GroupVersion.WithKind(marketv1alpha1.ContractKind))
	u.SetNamespace(ns)
	u.SetName("no-terms")
	if err := c.Create(t.Context(), u); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.terms: Required value") {
		t.Errorf("no terms: got %v, want Invalid saying spec.terms: Required value", err)
	}
}
