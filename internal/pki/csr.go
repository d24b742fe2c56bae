package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
)

// NewCSR makes a PEM certificate request for subject, signed with key (which the certificate
// will be for): an ECDSA key of NewKey, or an Ed25519 one.
func NewCSR(key crypto.Signer, subject pkix.Name) ([]byte, error) {
	if key == nil {
		return nil, errors.New("a certificate request needs a key")
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		return nil, fmt.Errorf("creating a certificate request for %s: %w", subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: CertificateRequestBlock, Bytes: der}), nil
}

// ParseCSRPEM parses a PEM certificate request. It does not check its signature.
func ParseCSRPEM(data []byte) (*x509.CertificateRequest, error) {
	return ParsePEM(data, CertificateRequestBlock, x509.ParseCertificateRequest)
}
