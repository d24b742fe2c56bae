package signing_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// TestResourceSliceCSR: a slice's certificate request follows upstream Liqo's rules (its
// authentication/csr.go), checked here from the bytes, not through our own helpers: a PEM
// "CERTIFICATE REQUEST" block and nothing after it, common name <slice>-<hex of the first 6
// bytes of sha256(consumer ID)>, the consumer ID as its only organization, PureEd25519 signed
// with the cluster's key. The provider's check accepts it, and refuses one signed by another
// key, one with another slice's common name, another consumer's organization, or a second
// organization.
func TestResourceSliceCSR(t *testing.T) {
	const slice, consumer = "my-slice", "cl-consumer"
	key, err := signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	data, err := key.ResourceSliceCSR(slice, consumer)
	if err != nil {
		t.Fatal(err)
	}
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" || len(rest) != 0 {
		t.Fatalf("not one PEM CERTIFICATE REQUEST block: %q", data)
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(consumer))
	if want := slice + "-" + hex.EncodeToString(sum[:])[:12]; req.Subject.CommonName != want {
		t.Errorf("common name %q, want %q", req.Subject.CommonName, want)
	}
	if len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != consumer {
		t.Errorf("organization %v, want [%s]", req.Subject.Organization, consumer)
	}
	if req.SignatureAlgorithm != x509.PureEd25519 {
		t.Errorf("signature algorithm %v, want PureEd25519", req.SignatureAlgorithm)
	}
	if err := req.CheckSignature(); err != nil {
		t.Errorf("signature: %v", err)
	}
	if pub, ok := req.PublicKey.(ed25519.PublicKey); !ok || !pub.Equal(key.Public) {
		t.Errorf("public key %v, want the cluster's", req.PublicKey)
	}
	if _, err := signing.CheckResourceSliceCSR(data, slice, consumer, key.Public); err != nil {
		t.Errorf("the provider refuses the consumer's own request: %v", err)
	}
	if _, err := signing.CheckResourceSliceCSR(data, slice, consumer, nil); err != nil {
		t.Errorf("the provider (no handshake) refuses the consumer's own request: %v", err)
	}

	must := func(data []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	other, err := signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	cn := signing.ResourceSliceCommonName(slice, consumer)
	forged := must(other.ResourceSliceCSR(slice, consumer))
	wrongCN := must(key.ResourceSliceCSR("other-slice", consumer))
	wrongO := must(key.CSR(cn, "cl-other"))
	twoO := must(key.CSR(cn, consumer, "system:masters"))
	noO := must(key.CSR(cn))
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"signed by another key", forged, "not for the public key"},
		{"another slice's common name", wrongCN, `is for "other-slice-`},
		{"another consumer's organization", wrongO, `"cl-other"`},
		{"a second organization", twoO, `"system:masters"`},
		{"no organization", noO, "want exactly [cl-consumer]"},
		{"not a request", []byte("garbage"), "certificate request"},
	} {
		_, err := signing.CheckResourceSliceCSR(c.data, slice, consumer, key.Public)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
}
