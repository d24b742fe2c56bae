package pki_test

import (
	"crypto"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
)

func newCA(t *testing.T, name string, now time.Time) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(name, 10*365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func pool(cas ...*pki.CA) *x509.CertPool {
	p := x509.NewCertPool()
	for _, ca := range cas {
		p.AddCert(ca.Cert)
	}
	return p
}

// sameSet says whether a and b hold the same strings (DER sorts a name's organizations).
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// TestNewCA: a CA is a P-256 key and a self-signed CA certificate for its name, valid from an
// hour before now for its lifetime, that may sign certificates.
func TestNewCA(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ca := newCA(t, "test-ca", now)
	c := ca.Cert
	if !c.IsCA || !c.BasicConstraintsValid || c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("not a signing CA: IsCA %v, basic constraints %v, key usage %v", c.IsCA, c.BasicConstraintsValid, c.KeyUsage)
	}
	if c.Subject.CommonName != "test-ca" || c.Issuer.CommonName != "test-ca" {
		t.Errorf("subject %s, issuer %s", c.Subject, c.Issuer)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if !c.NotBefore.Equal(now.Add(-pki.Backdate)) || !c.NotAfter.Equal(now.Add(10*365*24*time.Hour)) {
		t.Errorf("valid from %s to %s", c.NotBefore, c.NotAfter)
	}
	if ca.Key.Curve != elliptic.P256() || !ca.Key.PublicKey.Equal(c.PublicKey) {
		t.Error("the key is not a P-256 key matching the certificate")
	}
	if other := newCA(t, "test-ca", now); other.Cert.SerialNumber.Cmp(c.SerialNumber) == 0 {
		t.Error("two CAs share a serial number")
	}
}

// TestIssue: serving and client certificates chain to their CA for their own usage only, name
// their subject and hosts, and come with their own key.
func TestIssue(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ca, other := newCA(t, "test-ca", now), newCA(t, "other-ca", now)
	for name, tc := range map[string]struct {
		tmpl      pki.Template
		usage     x509.ExtKeyUsage
		wrong     x509.ExtKeyUsage
		dnsNames  []string
		addresses []net.IP
	}{
		"serving": {
			tmpl: pki.Template{Subject: pkix.Name{CommonName: "svc.ns.svc"}, Usage: pki.Serving, Lifetime: 365 * 24 * time.Hour, Now: now,
				Hosts: []string{"svc.ns.svc", "127.0.0.1", "localhost", "::1"}},
			usage: x509.ExtKeyUsageServerAuth, wrong: x509.ExtKeyUsageClientAuth,
			dnsNames: []string{"svc.ns.svc", "localhost"}, addresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		},
		"client": {
			tmpl: pki.Template{Subject: pkix.Name{CommonName: "alice", Organization: []string{"system:masters", "devs"}}, Usage: pki.Client,
				Lifetime: 7 * 24 * time.Hour, Now: now},
			usage: x509.ExtKeyUsageClientAuth, wrong: x509.ExtKeyUsageServerAuth,
		},
	} {
		leaf, err := ca.Issue(tc.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := leaf.Cert
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool(ca), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
			t.Errorf("%s: does not chain to its CA for usage %v: %v", name, tc.usage, err)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool(ca), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{tc.wrong}}); err == nil {
			t.Errorf("%s: verifies for usage %v too", name, tc.wrong)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool(other), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err == nil {
			t.Errorf("%s: verifies against another CA", name)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool(ca), CurrentTime: now.Add(tc.tmpl.Lifetime + time.Minute), KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err == nil {
			t.Errorf("%s: verifies after its lifetime", name)
		}
		if c.IsCA || c.KeyUsage != x509.KeyUsageDigitalSignature {
			t.Errorf("%s: IsCA %v, key usage %v", name, c.IsCA, c.KeyUsage)
		}
		if c.Subject.CommonName != tc.tmpl.Subject.CommonName || !sameSet(c.Subject.Organization, tc.tmpl.Subject.Organization) {
			t.Errorf("%s: subject %s", name, c.Subject)
		}
		if !c.NotBefore.Equal(now.Add(-pki.Backdate)) || !c.NotAfter.Equal(now.Add(tc.tmpl.Lifetime)) {
			t.Errorf("%s: valid from %s to %s", name, c.NotBefore, c.NotAfter)
		}
		if !slices.Equal(c.DNSNames, tc.dnsNames) || !slices.EqualFunc(c.IPAddresses, tc.addresses, net.IP.Equal) {
			t.Errorf("%s: DNS names %v, IP addresses %v; want %v, %v", name, c.DNSNames, c.IPAddresses, tc.dnsNames, tc.addresses)
		}
		for _, h := range tc.tmpl.Hosts {
			if err := c.VerifyHostname(h); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if c.VerifyHostname("evil.example") == nil {
			t.Errorf("%s: covers a host it was not asked for", name)
		}
		if leaf.Key.Curve != elliptic.P256() || !leaf.Key.PublicKey.Equal(c.PublicKey) || leaf.Key.Equal(ca.Key) {
			t.Errorf("%s: the key is not a new P-256 key matching the certificate", name)
		}
	}
}

// TestSelfSign: a signing certificate is self-signed by its own key, with no extended usage.
func TestSelfSign(t *testing.T) {
	p, err := pki.SelfSign(pki.Template{Subject: pkix.Name{CommonName: "signer"}, Usage: pki.Signing, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cert
	if err := c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
		t.Errorf("not signed by its own key: %v", err)
	}
	if c.IsCA || len(c.ExtKeyUsage) != 0 || c.KeyUsage != x509.KeyUsageDigitalSignature || c.Issuer.CommonName != "signer" {
		t.Errorf("IsCA %v, extended usages %v, usage %v, issuer %s", c.IsCA, c.ExtKeyUsage, c.KeyUsage, c.Issuer)
	}
	// Zero Now is the current time.
	if d := time.Since(c.NotBefore.Add(pki.Backdate)); d < 0 || d > time.Minute {
		t.Errorf("valid from %s, want about an hour ago", c.NotBefore)
	}
}

// TestBadTemplates: templates that cannot make a sensible certificate are refused.
func TestBadTemplates(t *testing.T) {
	ca := newCA(t, "test-ca", time.Time{})
	good := pki.Template{Subject: pkix.Name{CommonName: "x"}, Usage: pki.Serving, Hosts: []string{"x"}, Lifetime: time.Hour}
	for name, change := range map[string]func(*pki.Template){
		"no usage":                  func(t *pki.Template) { t.Usage = 0 },
		"unknown usage":             func(t *pki.Template) { t.Usage = 42 },
		"serving without host":      func(t *pki.Template) { t.Hosts = nil },
		"empty host":                func(t *pki.Template) { t.Hosts = []string{"x", ""} },
		"no common name":            func(t *pki.Template) { t.Subject.CommonName = "" },
		"zero lifetime":             func(t *pki.Template) { t.Lifetime = 0 },
		"negative lifetime":         func(t *pki.Template) { t.Lifetime = -time.Hour },
		"client with empty subject": func(t *pki.Template) { t.Usage, t.Subject = pki.Client, pkix.Name{} },
	} {
		tmpl := good
		change(&tmpl)
		if _, err := ca.Issue(tmpl); err == nil {
			t.Errorf("%s: issued", name)
		}
		if _, err := pki.SelfSign(tmpl); err == nil {
			t.Errorf("%s: self-signed", name)
		}
	}
	if _, err := ca.Issue(good); err != nil {
		t.Errorf("good template: %v", err)
	}
	if _, err := pki.NewCA("", time.Hour, time.Time{}); err == nil {
		t.Error("CA without a name made")
	}
	if _, err := pki.NewCA("ca", 0, time.Time{}); err == nil {
		t.Error("CA without a lifetime made")
	}
}

// TestPEM: certificates and keys come back from their PEM as they were, a certificate's PEM
// and its key's make a TLS key pair, and PEM of another kind or garbage is refused.
func TestPEM(t *testing.T) {
	ca := newCA(t, "test-ca", time.Time{})
	leaf, err := ca.Issue(pki.Template{Subject: pkix.Name{CommonName: "h"}, Usage: pki.Serving, Hosts: []string{"h"}, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	certPEM := leaf.CertPEM()
	keyPEM, err := leaf.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCertPEM(certPEM)
	if err != nil || !cert.Equal(leaf.Cert) {
		t.Errorf("certificate round trip: %v", err)
	}
	key, err := pki.ParseKeyPEM(keyPEM)
	if err != nil || !key.Equal(leaf.Key) {
		t.Errorf("key round trip: %v", err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Errorf("not a TLS key pair: %v", err)
	}
	if k, err := pki.ParsePEM(keyPEM, pki.ECPrivateKeyBlock, x509.ParseECPrivateKey); err != nil || !k.Equal(leaf.Key) {
		t.Errorf("EC PRIVATE KEY is not SEC 1: %v", err)
	}

	pkcs8, err := pki.EncodePKCS8KeyPEM(leaf.Key)
	if err != nil {
		t.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPEM, err := pki.EncodePKCS8KeyPEM(ed)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		pem  []byte
		want interface {
			Equal(x crypto.PrivateKey) bool
		}
	}{"ECDSA": {pkcs8, leaf.Key}, "Ed25519": {edPEM, ed}} {
		got, err := pki.ParsePEM(tc.pem, pki.PrivateKeyBlock, x509.ParsePKCS8PrivateKey)
		if err != nil || !tc.want.Equal(got) {
			t.Errorf("%s: PKCS #8 round trip: %v", name, err)
		}
	}
	if _, err := pki.EncodePKCS8KeyPEM("not a key"); err == nil {
		t.Error("a string encoded as a private key")
	}

	for name, data := range map[string][]byte{"garbage": []byte("nope"), "empty": nil, "key": keyPEM, "PKCS #8 key": pkcs8} {
		if _, err := pki.ParseCertPEM(data); err == nil {
			t.Errorf("%s parsed as a certificate", name)
		}
	}
	for name, data := range map[string][]byte{"garbage": []byte("nope"), "certificate": certPEM, "PKCS #8 key": pkcs8} {
		if _, err := pki.ParseKeyPEM(data); err == nil {
			t.Errorf("%s parsed as an EC key", name)
		}
	}
	broken := []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	if _, err := pki.ParseCertPEM(broken); err == nil {
		t.Error("a CERTIFICATE block of junk parsed")
	}
}

// TestParseCA: a CA comes back from its PEM; a certificate that is not a CA, or a key that is
// not the CA's, is refused.
func TestParseCA(t *testing.T) {
	ca, other := newCA(t, "test-ca", time.Time{}), newCA(t, "other-ca", time.Time{})
	caKey, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := other.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	got, err := pki.ParseCA(ca.CertPEM(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Cert.Equal(ca.Cert) || !got.Key.Equal(ca.Key) {
		t.Error("parsed CA differs")
	}
	// The parsed CA signs certificates that chain to the original.
	leaf, err := got.Issue(pki.Template{Subject: pkix.Name{CommonName: "u"}, Usage: pki.Client, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: pool(ca), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Error(err)
	}
	leafKey, err := leaf.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2][]byte{
		"another CA's key":  {ca.CertPEM(), otherKey},
		"a leaf":            {leaf.CertPEM(), leafKey},
		"garbage":           {[]byte("x"), caKey},
		"no key":            {ca.CertPEM(), nil},
		"key as the cert":   {caKey, caKey},
		"cert as the key":   {ca.CertPEM(), ca.CertPEM()},
		"nothing":           {nil, nil},
		"other CA, our key": {other.CertPEM(), caKey},
	} {
		if _, err := pki.ParseCA(pair[0], pair[1]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestCSR: a request, made with an ECDSA or an Ed25519 key, names its subject, is signed by
// and for its key, and comes back from its PEM.
func TestCSR(t *testing.T) {
	ecKey, err := pki.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if ecKey.Curve != elliptic.P256() {
		t.Errorf("curve %s", ecKey.Curve.Params().Name)
	}
	edPub, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	subject := pkix.Name{CommonName: "cl-consumer", Organization: []string{"liqo.io"}}
	for name, tc := range map[string]struct {
		key crypto.Signer
		pub interface{ Equal(x crypto.PublicKey) bool }
	}{"ECDSA": {ecKey, &ecKey.PublicKey}, "Ed25519": {edKey, edPub}} {
		csr, err := pki.NewCSR(tc.key, subject)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		req, err := pki.ParseCSRPEM(csr)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := req.CheckSignature(); err != nil {
			t.Errorf("%s: signature: %v", name, err)
		}
		if req.Subject.CommonName != "cl-consumer" || !slices.Equal(req.Subject.Organization, []string{"liqo.io"}) {
			t.Errorf("%s: subject %s", name, req.Subject)
		}
		if !tc.pub.Equal(req.PublicKey) {
			t.Errorf("%s: request is not for its key", name)
		}
	}
	if _, err := pki.NewCSR(nil, subject); err == nil {
		t.Error("request without a key made")
	}
	ca := newCA(t, "test-ca", time.Time{})
	for name, data := range map[string][]byte{"certificate": ca.CertPEM(), "garbage": []byte("x"),
		"junk request": []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")} {
		if _, err := pki.ParseCSRPEM(data); err == nil {
			t.Errorf("%s parsed as a request", name)
		}
	}
}
