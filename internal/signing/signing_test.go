package signing_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// TestRoundTrip: encoded keys decode to the same keys; a signature verifies with the right key
// and nonce only.
func TestRoundTrip(t *testing.T) {
	k, err := signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	privPEM, err := k.EncodePrivate()
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := k.EncodePublic()
	if err != nil {
		t.Fatal(err)
	}
	k2, err := signing.ParsePrivate(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signing.ParsePublic(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k2.Public, k.Public) || !bytes.Equal(pub, k.Public) {
		t.Fatal("decoded keys differ from the generated ones")
	}
	nonce := []byte("nonce-123")
	sig := k2.Sign(nonce)
	if !signing.Verify(pub, nonce, sig) {
		t.Error("signature does not verify")
	}
	if signing.Verify(pub, []byte("other nonce"), sig) {
		t.Error("signature verifies for another nonce")
	}
	other, err := signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if signing.Verify(other.Public, nonce, sig) {
		t.Error("signature verifies with another key")
	}
	if _, err := signing.ParsePrivate(pubPEM); err == nil {
		t.Error("a public key parsed as a private key")
	}
	if _, err := signing.ParsePublic([]byte("garbage")); err == nil {
		t.Error("garbage parsed as a public key")
	}
}

// TestCSR: a request checks out for its own common name and key only.
func TestCSR(t *testing.T) {
	k, err := signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	other, err := signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := k.CSR("cl-consumer", "liqo.io")
	if err != nil {
		t.Fatal(err)
	}
	req, err := signing.CheckCSR(csr, "cl-consumer", []string{"liqo.io"}, k.Public)
	if err != nil {
		t.Fatal(err)
	}
	if req.Subject.Organization[0] != "liqo.io" {
		t.Errorf("organization %v", req.Subject.Organization)
	}
	if _, err := signing.CheckCSR(csr, "cl-other", []string{"liqo.io"}, nil); err == nil {
		t.Error("request accepted for another common name")
	}
	if _, err := signing.CheckCSR(csr, "cl-consumer", []string{"liqo.io"}, other.Public); err == nil {
		t.Error("request accepted for another key")
	}
	masters, err := k.CSR("cl-consumer", "liqo.io", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signing.CheckCSR(masters, "cl-consumer", []string{"liqo.io"}, k.Public); err == nil || !strings.Contains(err.Error(), "system:masters") {
		t.Errorf("request for group system:masters: %v, want refused", err)
	}
	none, err := k.CSR("cl-consumer")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signing.CheckCSR(none, "cl-consumer", []string{"liqo.io"}, k.Public); err != nil {
		t.Errorf("request without an organization: %v", err)
	}
}

// A Tenant's public key is accepted in upstream Liqo's PEM form and as the raw key; anything
// else is an error.
func TestParseTenantKey(t *testing.T) {
	k, err := signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	pemKey, err := k.EncodePublic()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"PEM": pemKey, "raw": []byte(k.Public)} {
		got, err := signing.ParseTenantKey(data)
		if err != nil || !got.Equal(k.Public) {
			t.Errorf("%s: %v, %v; want the key", name, got, err)
		}
	}
	for name, data := range map[string][]byte{"empty": nil, "short": []byte("abc"), "not PEM": make([]byte, 40)} {
		if _, err := signing.ParseTenantKey(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
