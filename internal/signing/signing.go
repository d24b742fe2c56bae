// Package signing holds the cluster's signing identity: an Ed25519 key pair, its PEM encoding,
// and signing and verifying the nonces of the authentication handshake. Key material is handled
// here and in package pki (PEM and certificate requests) only, and never logged.
package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
)

// publicKeyBlock is the PEM block type of an encoded public key.
const publicKeyBlock = "PUBLIC KEY"

// KeyPair is an Ed25519 key pair.
type KeyPair struct {
	// Private signs.
	Private ed25519.PrivateKey
	// Public verifies.
	Public ed25519.PublicKey
}

// Generate makes a new key pair from the system's random source.
func Generate() (*KeyPair, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating Ed25519 key: %w", err)
	}
	return &KeyPair{Private: priv, Public: pub}, nil
}

// EncodePrivate returns the private key as PKCS #8 PEM.
func (k *KeyPair) EncodePrivate() ([]byte, error) {
	return pki.EncodePKCS8KeyPEM(k.Private)
}

// EncodePublic returns the public key as PKIX PEM.
func (k *KeyPair) EncodePublic() ([]byte, error) {
	return EncodePublicKey(k.Public)
}

// EncodePublicKey returns an Ed25519 public key as PKIX PEM.
func EncodePublicKey(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: publicKeyBlock, Bytes: der}), nil
}

// ParsePrivate decodes a PKCS #8 PEM Ed25519 private key into a key pair.
func ParsePrivate(data []byte) (*KeyPair, error) {
	key, err := pki.ParsePEM(data, pki.PrivateKeyBlock, x509.ParsePKCS8PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("private key is %T, want Ed25519", key)
	}
	pub, ok := priv.Public().(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("private key has no Ed25519 public key")
	}
	return &KeyPair{Private: priv, Public: pub}, nil
}

// ParsePublic decodes a PKIX PEM Ed25519 public key.
func ParsePublic(data []byte) (ed25519.PublicKey, error) {
	key, err := pki.ParsePEM(data, publicKeyBlock, x509.ParsePKIXPublicKey)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("public key is %T, want Ed25519", key)
	}
	return pub, nil
}

// ParseTenantKey decodes a Tenant's spec.publicKey: a PKIX PEM Ed25519 key (what upstream Liqo
// writes, and we now too) or the raw 32-byte key (what we wrote before).
func ParseTenantKey(data []byte) (ed25519.PublicKey, error) {
	if len(data) == ed25519.PublicKeySize {
		return ed25519.PublicKey(data), nil
	}
	pub, err := ParsePublic(data)
	if err != nil {
		return nil, fmt.Errorf("neither a PEM Ed25519 public key nor a raw %d-byte one: %w", ed25519.PublicKeySize, err)
	}
	return pub, nil
}

// Sign signs a nonce.
func (k *KeyPair) Sign(nonce []byte) []byte {
	return ed25519.Sign(k.Private, nonce)
}

// Verify reports whether sig is pub's signature of nonce.
func Verify(pub ed25519.PublicKey, nonce, sig []byte) bool {
	return len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, nonce, sig)
}
