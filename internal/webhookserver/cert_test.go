package webhookserver

import (
	"bytes"
	"crypto/x509"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
)

func leaf(t *testing.T, data map[string][]byte) *x509.Certificate {
	t.Helper()
	c, err := pki.ParseCertPEM(data[TLSCertKey])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCertificates: new certificates are made once and reused; a serving certificate for other
// hosts, one close to its end or a broken one is renewed under the same CA; a CA close to its
// end, or a CA key that does not match, is replaced with everything.
func TestCertificates(t *testing.T) {
	now := time.Now()
	hosts := []string{"liqo-webhook.liqo.svc", "127.0.0.1"}
	first, changed, err := certificates(nil, hosts, now)
	if err != nil || !changed {
		t.Fatalf("from nothing: changed %v, %v", changed, err)
	}
	c := leaf(t, first)
	if err := c.VerifyHostname("liqo-webhook.liqo.svc"); err != nil {
		t.Error(err)
	}
	if err := c.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
	if c.VerifyHostname("evil.example") == nil {
		t.Error("the certificate covers a host it was not asked for")
	}

	same, changed, err := certificates(first, hosts, now.Add(24*time.Hour))
	if err != nil || changed || !sameData(same, first) {
		t.Errorf("valid certificates were not reused: changed %v, %v", changed, err)
	}

	for name, tc := range map[string]struct {
		data  map[string][]byte
		hosts []string
		at    time.Time
	}{
		"other hosts":              {first, []string{"127.0.0.2"}, now},
		"serving ends in 80 days":  {first, hosts, now.Add(servingValidity - 80*24*time.Hour)},
		"serving key is garbage":   {map[string][]byte{CACertKey: first[CACertKey], CAKeyKey: first[CAKeyKey], TLSCertKey: first[TLSCertKey], TLSKeyKey: []byte("x")}, hosts, now},
		"serving certificate gone": {map[string][]byte{CACertKey: first[CACertKey], CAKeyKey: first[CAKeyKey]}, hosts, now},
	} {
		out, changed, err := certificates(tc.data, tc.hosts, tc.at)
		if err != nil || !changed {
			t.Errorf("%s: changed %v, %v", name, changed, err)
			continue
		}
		if !bytes.Equal(out[CACertKey], first[CACertKey]) || !bytes.Equal(out[CAKeyKey], first[CAKeyKey]) {
			t.Errorf("%s: the CA changed (the caBundle every replica trusts would change)", name)
		}
		if bytes.Equal(out[TLSCertKey], first[TLSCertKey]) {
			t.Errorf("%s: the serving certificate was not renewed", name)
		}
		if err := checkServing(out, mustCA(t, out), tc.hosts, tc.at); err != nil {
			t.Errorf("%s: renewed certificate not valid: %v", name, err)
		}
	}

	other, _, err := certificates(nil, hosts, now)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		data map[string][]byte
		at   time.Time
	}{
		"CA ends within a serving lifetime": {first, now.Add(caValidity - servingValidity)},
		"CA key of another CA":              {map[string][]byte{CACertKey: first[CACertKey], CAKeyKey: other[CAKeyKey], TLSCertKey: first[TLSCertKey], TLSKeyKey: first[TLSKeyKey]}, now},
		"CA is not PEM":                     {map[string][]byte{CACertKey: []byte("nope"), CAKeyKey: first[CAKeyKey]}, now},
		"serving signed by another CA":      {map[string][]byte{CACertKey: first[CACertKey], CAKeyKey: first[CAKeyKey], TLSCertKey: other[TLSCertKey], TLSKeyKey: other[TLSKeyKey]}, now},
	} {
		out, changed, err := certificates(tc.data, hosts, tc.at)
		if err != nil || !changed {
			t.Errorf("%s: changed %v, %v", name, changed, err)
			continue
		}
		if err := checkServing(out, mustCA(t, out), hosts, tc.at); err != nil {
			t.Errorf("%s: new certificates not valid: %v", name, err)
		}
		if name != "serving signed by another CA" && bytes.Equal(out[CACertKey], first[CACertKey]) {
			t.Errorf("%s: the CA was kept", name)
		}
	}
	if _, _, err := certificates(nil, nil, now); err == nil {
		t.Error("no host: no error")
	}
}

func mustCA(t *testing.T, data map[string][]byte) *x509.Certificate {
	t.Helper()
	ca, err := parseCA(data)
	if err != nil {
		t.Fatal(err)
	}
	return ca.Cert
}
