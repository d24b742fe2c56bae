package webhookserver

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
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
	ca, caKey, caErr := parseCA(data)
	// The CA must outlive every serving certificate it signs until that one is renewed.
	if caErr == nil && ca.NotAfter.Sub(now) < servingValidity+renewBefore {
		caErr = fmt.Errorf("the CA expires on %s", ca.NotAfter.Format(time.RFC3339))
	}
	if caErr == nil {
		if servingErr := checkServing(data, ca, hosts, now); servingErr == nil {
			return data, false, nil
		}
	} else {
		var caPEM, caKeyPEM []byte
		if ca, caKey, caPEM, caKeyPEM, err = newCA(now); err != nil {
			return nil, false, err
		}
		data = map[string][]byte{CACertKey: caPEM, CAKeyKey: caKeyPEM}
	}
	certPEM, keyPEM, err := newServing(ca, caKey, hosts, now)
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
func parseCA(data map[string][]byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cert, err := parseCert(data[CACertKey])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", CACertKey, err)
	}
	if !cert.IsCA {
		return nil, nil, fmt.Errorf("%s is not a CA", CACertKey)
	}
	key, err := parseKey(data[CAKeyKey])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", CAKeyKey, err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, nil, fmt.Errorf("%s does not match %s", CAKeyKey, CACertKey)
	}
	return cert, key, nil
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

func parseCert(p []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(p)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate: %w", err)
	}
	return cert, nil
}

func parseKey(p []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(p)
	if block == nil {
		return nil, errors.New("no PEM key")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing EC key: %w", err)
	}
	return key, nil
}

func newCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, []byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("generating the webhook CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "liqo-webhook-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("creating the webhook CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("parsing the webhook CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func newServing(ca *x509.Certificate, caKey *ecdsa.PrivateKey, hosts []string, now time.Time) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the webhook serving key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(servingValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the webhook serving certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding an EC key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a certificate serial number: %w", err)
	}
	return n, nil
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
