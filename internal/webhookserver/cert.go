package webhookserver

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
)

// Data keys of the certificate Secret. The Secret has type kubernetes.io/tls; the CA's key is
// kept too, so that a serving certificate can be renewed under the same CA (the caBundle of
// the webhook configurations, and what other replicas trust, does not change).
const (
	CACertKey  = "ca.crt"
	CAKeyKey   = "ca.key"
	TLSCertKey = "tls.crt"
	TLSKeyKey  = "tls.key"
)

// Lifetimes of the certificates, and how long before its end a certificate is replaced.
const (
	caValidity      = 10 * 365 * 24 * time.Hour
	servingValidity = 365 * 24 * time.Hour
	renewBefore     = 90 * 24 * time.Hour
)

// certificates returns the data of the certificate Secret for hosts (DNS names or IP
// addresses): data itself when it holds a CA and a serving certificate signed by it for every
// host, both valid for longer than renewBefore after now; otherwise data with what is missing
// or ending replaced: a new serving certificate under the existing CA when only the serving
// certificate is at fault, a new CA and serving certificate otherwise. changed says whether
// out differs from data.
func certificates(data map[string][]byte, hosts []string, now time.Time) (out map[string][]byte, changed bool, err error) {
	if len(hosts) == 0 {
		return nil, false, errors.New("no host to issue the webhook serving certificate for")
	}
	ca, caErr := parseCA(data)
	// The CA must outlive every serving certificate it signs until that one is renewed.
	if caErr == nil && ca.Cert.NotAfter.Sub(now) < servingValidity+renewBefore {
		caErr = fmt.Errorf("the CA expires on %s", ca.Cert.NotAfter.Format(time.RFC3339))
	}
	if caErr == nil {
		if servingErr := checkServing(data, ca.Cert, hosts, now); servingErr == nil {
			return data, false, nil
		}
	} else {
		var caPEM, caKeyPEM []byte
		if ca, caPEM, caKeyPEM, err = newCA(now); err != nil {
			return nil, false, err
		}
		data = map[string][]byte{CACertKey: caPEM, CAKeyKey: caKeyPEM}
	}
	certPEM, keyPEM, err := newServing(ca, hosts, now)
	if err != nil {
		return nil, false, err
	}
	out = map[string][]byte{CACertKey: data[CACertKey], CAKeyKey: data[CAKeyKey], TLSCertKey: certPEM, TLSKeyKey: keyPEM}
	return out, true, nil
}

// checkProvided fails unless data, a certificate Secret kept by someone else, holds a serving
// certificate and its key (tls.crt, tls.key) valid now and for host, and, when it has a ca.crt,
// a certificate chain from that CA. It never looks at a CA key.
func checkProvided(data map[string][]byte, host string, now time.Time) error {
	pair, err := tls.X509KeyPair(data[TLSCertKey], data[TLSKeyKey])
	if err != nil {
		return fmt.Errorf("%s and %s are not a certificate and its key: %w", TLSCertKey, TLSKeyKey, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("%s: %w", TLSCertKey, err)
	}
	if now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		return fmt.Errorf("%s is valid from %s to %s, not now", TLSCertKey, cert.NotBefore.Format(time.RFC3339), cert.NotAfter.Format(time.RFC3339))
	}
	if err := cert.VerifyHostname(host); err != nil {
		return fmt.Errorf("%s does not cover %s, the name the API server calls the webhooks at: %w", TLSCertKey, host, err)
	}
	if len(data[CACertKey]) == 0 {
		return nil
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data[CACertKey]) {
		return fmt.Errorf("%s holds no PEM certificate", CACertKey)
	}
	intermediates := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			intermediates.AddCert(c)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("%s is not trusted by %s, which the webhook configurations give the API server: %w", TLSCertKey, CACertKey, err)
	}
	return nil
}

// parseCA reads the CA certificate and key of data.
func parseCA(data map[string][]byte) (*pki.CA, error) {
	ca, err := pki.ParseCA(data[CACertKey], data[CAKeyKey])
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", CACertKey, CAKeyKey, err)
	}
	return ca, nil
}

// checkServing fails unless data's serving certificate and key match, are signed by ca, cover
// hosts and stay valid for longer than renewBefore.
func checkServing(data map[string][]byte, ca *x509.Certificate, hosts []string, now time.Time) error {
	pair, err := tls.X509KeyPair(data[TLSCertKey], data[TLSKeyKey])
	if err != nil {
		return fmt.Errorf("serving key pair: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		return fmt.Errorf("serving certificate not signed by the CA: %w", err)
	}
	if cert.NotAfter.Sub(now) < renewBefore || now.Before(cert.NotBefore) {
		return fmt.Errorf("serving certificate valid from %s to %s", cert.NotBefore, cert.NotAfter)
	}
	for _, h := range hosts {
		if err := cert.VerifyHostname(h); err != nil {
			return fmt.Errorf("serving certificate: %w", err)
		}
	}
	return nil
}

// newCA makes the webhook CA and returns it with its certificate and key as PEM.
func newCA(now time.Time) (*pki.CA, []byte, []byte, error) {
	ca, err := pki.NewCA("liqo-webhook-ca", caValidity, now)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("making the webhook CA: %w", err)
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the webhook CA: %w", err)
	}
	return ca, ca.CertPEM(), keyPEM, nil
}

// newServing issues a serving certificate for hosts (the first one is its common name) under ca
// and returns it and its key as PEM.
func newServing(ca *pki.CA, hosts []string, now time.Time) ([]byte, []byte, error) {
	serving, err := ca.Issue(pki.Template{Subject: pkix.Name{CommonName: hosts[0]}, Usage: pki.Serving, Hosts: hosts,
		Lifetime: servingValidity, Now: now})
	if err != nil {
		return nil, nil, fmt.Errorf("issuing the webhook serving certificate: %w", err)
	}
	keyPEM, err := serving.KeyPEM()
	if err != nil {
		return nil, nil, fmt.Errorf("the webhook serving certificate: %w", err)
	}
	return serving.CertPEM(), keyPEM, nil
}

// sameData says whether two Secret data maps hold the same certificates.
func sameData(a, b map[string][]byte) bool {
	for _, k := range []string{CACertKey, CAKeyKey, TLSCertKey, TLSKeyKey} {
		if !bytes.Equal(a[k], b[k]) {
			return false
		}
	}
	return true
}
