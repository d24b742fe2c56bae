package contract

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

var (
	// ErrUnsigned is the error of a signature that is missing.
	ErrUnsigned = errors.New("no signature")
	// ErrBadSignature is the error of a signature that does not verify with the party's key:
	// the terms changed since it was made, or another key made it.
	ErrBadSignature = errors.New("the signature does not verify")
)

// Sign checks terms (CheckTerms) and signs their canonical encoding with key (a cluster's own,
// signing.ReadClusterKey): the value of a Contract's spec.consumerSignature or
// status.providerSignature. Invalid terms are not signed.
func Sign(terms *marketv1alpha1.ContractTerms, key *signing.KeyPair) ([]byte, error) {
	if key == nil || len(key.Private) != ed25519.PrivateKeySize {
		return nil, errors.New("signing contract terms: no Ed25519 private key")
	}
	if err := CheckTerms(terms); err != nil {
		return nil, fmt.Errorf("signing contract terms: %w", err)
	}
	return key.Sign(Canonical(terms)), nil
}

// Verify checks that sig is pub's signature of the canonical encoding of terms: ErrUnsigned
// when sig is empty, ErrBadSignature when it does not verify.
func Verify(terms *marketv1alpha1.ContractTerms, sig []byte, pub ed25519.PublicKey) error {
	if len(sig) == 0 {
		return ErrUnsigned
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("verifying a contract signature: the public key has %d bytes, want an Ed25519 key of %d",
			len(pub), ed25519.PublicKeySize)
	}
	if !signing.Verify(pub, Canonical(terms), sig) {
		return ErrBadSignature
	}
	return nil
}

// VerifyBoth checks both signatures of c: spec.consumerSignature with the consumer's public key
// (its Tenant's spec.publicKey on the provider, signing.ParseTenantKey) and
// status.providerSignature with the provider's. The error names each signature that fails, its
// party and cluster, and wraps ErrUnsigned or ErrBadSignature.
func VerifyBoth(c *marketv1alpha1.Contract, consumerPub, providerPub ed25519.PublicKey) error {
	terms := &c.Spec.Terms
	var errs []error
	if err := Verify(terms, c.Spec.ConsumerSignature, consumerPub); err != nil {
		errs = append(errs, fmt.Errorf("contract %s/%s: spec.consumerSignature (consumer %s): %w",
			c.Namespace, c.Name, terms.ConsumerClusterID, err))
	}
	if err := Verify(terms, c.Status.ProviderSignature, providerPub); err != nil {
		errs = append(errs, fmt.Errorf("contract %s/%s: status.providerSignature (provider %s): %w",
			c.Namespace, c.Name, terms.ProviderClusterID, err))
	}
	return errors.Join(errs...)
}

// TermsDigest is the SHA-256 of the canonical encoding of terms, in hexadecimal: what a
// consumer records (consts.ContractSignedTermsAnnotation) of the terms it signed, so that its
// replication controller, which holds no key, tells signed terms from terms not yet signed.
func TermsDigest(terms *marketv1alpha1.ContractTerms) string {
	sum := sha256.Sum256(Canonical(terms))
	return hex.EncodeToString(sum[:])
}

// SignedByConsumer tells whether the consumer's Contract c holds a signature of its current
// terms, as its consumer's controller manager records it (consts.ContractSignedTermsAnnotation).
// It does not verify the signature: the provider does.
func SignedByConsumer(c *marketv1alpha1.Contract) bool {
	return len(c.Spec.ConsumerSignature) > 0 && c.Annotations[consts.ContractSignedTermsAnnotation] == TermsDigest(&c.Spec.Terms)
}
