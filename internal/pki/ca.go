package pki

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Backdate is how long before its Now a certificate becomes valid, so that peers whose clocks
// are a little behind accept it at once.
const Backdate = time.Hour

// Usage is what a leaf certificate is for.
type Usage int

// The usages of a leaf certificate. Every leaf has the key usage digital signature only.
const (
	// Serving certificates authenticate TLS servers (extended key usage server auth).
	Serving Usage = iota + 1
	// Client certificates authenticate TLS clients (extended key usage client auth).
	Client
	// Signing certificates carry a signing key and no extended key usage (the ServiceAccount
	// token signer's).
	Signing
)

// Template describes a leaf certificate to make.
type Template struct {
	// Subject of the certificate: a client certificate's common name is the user Kubernetes
	// sees, its organizations the user's groups.
	Subject pkix.Name
	// Usage is what the certificate is for.
	Usage Usage
	// Hosts are the DNS names and IP addresses the certificate is for, in its subject
	// alternative names; a Serving certificate needs at least one.
	Hosts []string
	// Lifetime is how long the certificate is valid after Now.
	Lifetime time.Duration
	// Now is when the certificate is made; zero means time.Now(). The certificate is valid from
	// Backdate before Now.
	Now time.Time
}

// KeyPair is a certificate and its private key.
type KeyPair struct {
	// Cert is the certificate.
	Cert *x509.Certificate
	// Key is the certificate's private key.
	Key *ecdsa.PrivateKey
}

// CertPEM returns the certificate as PEM.
func (p *KeyPair) CertPEM() []byte { return EncodeCertPEM(p.Cert) }

// KeyPEM returns the private key as a PEM EC PRIVATE KEY block (SEC 1).
func (p *KeyPair) KeyPEM() ([]byte, error) { return EncodeKeyPEM(p.Key) }

// CA is a self-signed certificate authority: its certificate and the key it signs with.
type CA struct {
	KeyPair
}

// NewCA makes a CA with a new ECDSA P-256 key and a self-signed certificate for commonName,
// valid from Backdate before now (zero: time.Now()) until lifetime after it, for signing
// certificates.
func NewCA(commonName string, lifetime time.Duration, now time.Time) (*CA, error) {
	if commonName == "" {
		return nil, errors.New("a CA needs a common name")
	}
	tmpl, err := certificateTemplate(pkix.Name{CommonName: commonName}, lifetime, now)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	tmpl.IsCA = true
	pair, err := create(tmpl, nil)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", commonName, err)
	}
	return &CA{KeyPair: *pair}, nil
}

// ParseCA reads a CA from the PEM of its certificate and of its EC private key, checking that
// the certificate is a CA's and that the key is its.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := ParseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certificate %s is not a CA", cert.Subject.CommonName)
	}
	key, err := ParseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("the key is not that of CA %s", cert.Subject.CommonName)
	}
	return &CA{KeyPair{Cert: cert, Key: key}}, nil
}

// Issue makes a new ECDSA P-256 key and a certificate for it from t, signed by the CA.
func (ca *CA) Issue(t Template) (*KeyPair, error) {
	tmpl, err := leafTemplate(t)
	if err != nil {
		return nil, err
	}
	pair, err := create(tmpl, &ca.KeyPair)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", t.Subject.CommonName, err)
	}
	return pair, nil
}

// SelfSign makes a new ECDSA P-256 key and a certificate for it from t, signed by that key
// itself (not a CA: nothing verifies against it, what matters is the key).
func SelfSign(t Template) (*KeyPair, error) {
	tmpl, err := leafTemplate(t)
	if err != nil {
		return nil, err
	}
	pair, err := create(tmpl, nil)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", t.Subject.CommonName, err)
	}
	return pair, nil
}

// leafTemplate checks t and turns it into a certificate template.
func leafTemplate(t Template) (*x509.Certificate, error) {
	if t.Subject.CommonName == "" {
		return nil, errors.New("a certificate needs a common name")
	}
	tmpl, err := certificateTemplate(t.Subject, t.Lifetime, t.Now)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	switch t.Usage {
	case Serving:
		if len(t.Hosts) == 0 {
			return nil, fmt.Errorf("serving certificate %s names no host", t.Subject.CommonName)
		}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	case Client:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case Signing:
	default:
		return nil, fmt.Errorf("certificate %s: unknown usage %d", t.Subject.CommonName, t.Usage)
	}
	for _, h := range t.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		} else {
			return nil, fmt.Errorf("certificate %s: empty host name", t.Subject.CommonName)
		}
	}
	return tmpl, nil
}

// certificateTemplate is what every certificate has: a random serial number, subject and
// validity.
func certificateTemplate(subject pkix.Name, lifetime time.Duration, now time.Time) (*x509.Certificate, error) {
	if lifetime <= 0 {
		return nil, fmt.Errorf("certificate %s: lifetime %s is not positive", subject.CommonName, lifetime)
	}
	if now.IsZero() {
		now = time.Now()
	}
	// 127 random bits: positive, unique in practice, within RFC 5280's 20 octets.
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a certificate serial number: %w", err)
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-Backdate),
		NotAfter:     now.Add(lifetime),
	}, nil
}

// create makes a new key and the certificate of tmpl for it, signed by issuer, or by the new
// key itself when issuer is nil.
func create(tmpl *x509.Certificate, issuer *KeyPair) (*KeyPair, error) {
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	parent, parentKey := tmpl, key
	if issuer != nil {
		parent, parentKey = issuer.Cert, issuer.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the signed certificate: %w", err)
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}
