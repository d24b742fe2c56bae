package signing

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
)

// csrBlock is the PEM block type of a certificate request.
const csrBlock = "CERTIFICATE REQUEST"

// CSR makes a PEM certificate request for a client certificate with common name cn (the
// cluster ID) and organizations orgs, signed with the key pair.
func (k *KeyPair) CSR(cn string, orgs ...string) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: orgs},
	}, k.Private)
	if err != nil {
		return nil, fmt.Errorf("creating certificate request for %s: %w", cn, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: csrBlock, Bytes: der}), nil
}

// CheckCSR parses a PEM certificate request and checks that its signature is valid, that its
// common name is cn, that every organization it names is in orgs (the API server takes them as
// the user's groups: a request naming system:masters would make its holder a cluster
// administrator) and, when pub is given, that it is for that public key. It returns the request.
func CheckCSR(data []byte, cn string, orgs []string, pub ed25519.PublicKey) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != csrBlock {
		return nil, errors.New("not a PEM certificate request")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request signature: %w", err)
	}
	if req.Subject.CommonName != cn {
		return nil, fmt.Errorf("certificate request is for %q, not %q", req.Subject.CommonName, cn)
	}
	for _, o := range req.Subject.Organization {
		if !slices.Contains(orgs, o) {
			return nil, fmt.Errorf("certificate request names organization (group) %q: only %v may be asked for", o, orgs)
		}
	}
	if pub != nil {
		got, ok := req.PublicKey.(ed25519.PublicKey)
		if !ok || !got.Equal(pub) {
			return nil, errors.New("certificate request is not for the public key the handshake verified")
		}
	}
	return req, nil
}

// ParseCertificate parses the first certificate of a PEM bundle.
func ParseCertificate(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate: %w", err)
	}
	return cert, nil
}

// CertificateMatchesCSR tells whether a certificate is for the public key of a PEM request.
func CertificateMatchesCSR(cert *x509.Certificate, csr []byte) bool {
	block, _ := pem.Decode(csr)
	if block == nil {
		return false
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return false
	}
	want, ok := req.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && want.Equal(cert.PublicKey)
}
