// Package pki makes and reads the X.509 material of the project: ECDSA P-256 keys, self-signed
// certificate authorities, the leaf certificates they sign (serving or client), certificate
// requests, and the PEM encodings of all of them.
//
// Private keys are only generated, encoded and parsed here: nothing in this package logs or
// prints them, and its errors never hold key material. Where keys are written (Secrets, files,
// kubeconfigs) is the callers' concern.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// PEM block types.
const (
	// CertificateBlock is the block type of a certificate.
	CertificateBlock = "CERTIFICATE"
	// ECPrivateKeyBlock is the block type of an EC private key in SEC 1 form.
	ECPrivateKeyBlock = "EC PRIVATE KEY"
	// PrivateKeyBlock is the block type of a private key in PKCS #8 form.
	PrivateKeyBlock = "PRIVATE KEY"
	// CertificateRequestBlock is the block type of a PKCS #10 certificate request.
	CertificateRequestBlock = "CERTIFICATE REQUEST"
)

// NewKey generates an ECDSA P-256 private key from the system's random source.
func NewKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating an ECDSA P-256 key: %w", err)
	}
	return key, nil
}

// EncodeCertPEM returns cert as a PEM CERTIFICATE block.
func EncodeCertPEM(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: CertificateBlock, Bytes: cert.Raw})
}

// EncodeKeyPEM returns an EC private key as a PEM EC PRIVATE KEY block (SEC 1).
func EncodeKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding an EC private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: ECPrivateKeyBlock, Bytes: der}), nil
}

// EncodePKCS8KeyPEM returns a private key of any type x509 supports (ECDSA, Ed25519, RSA) as a
// PEM PRIVATE KEY block (PKCS #8).
func EncodePKCS8KeyPEM(key crypto.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding a PKCS #8 private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: PrivateKeyBlock, Bytes: der}), nil
}

// ParsePEM parses the first PEM block of data, which must be of type blockType, with parse:
// x509.ParseCertificate, x509.ParsePKCS8PrivateKey, x509.ParsePKIXPublicKey and the like.
func ParsePEM[T any](data []byte, blockType string, parse func(der []byte) (T, error)) (T, error) {
	var zero T
	block, _ := pem.Decode(data)
	if block == nil {
		return zero, fmt.Errorf("no PEM block, want %s", blockType)
	}
	if block.Type != blockType {
		return zero, fmt.Errorf("PEM block is %s, want %s", block.Type, blockType)
	}
	v, err := parse(block.Bytes)
	if err != nil {
		// x509's errors name what is wrong with the encoding, never the bytes (of a key).
		return zero, fmt.Errorf("parsing %s: %w", blockType, err)
	}
	return v, nil
}

// ParseCertPEM parses the first certificate of a PEM bundle.
func ParseCertPEM(data []byte) (*x509.Certificate, error) {
	return ParsePEM(data, CertificateBlock, x509.ParseCertificate)
}

// ParseKeyPEM parses a PEM EC PRIVATE KEY block (SEC 1), what EncodeKeyPEM writes.
func ParseKeyPEM(data []byte) (*ecdsa.PrivateKey, error) {
	return ParsePEM(data, ECPrivateKeyBlock, x509.ParseECPrivateKey)
}
