package signing

import (
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"slices"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
)

// CSR makes a PEM certificate request for a client certificate with common name cn (the
// cluster ID) and organizations orgs, signed with the key pair.
func (k *KeyPair) CSR(cn string, orgs ...string) ([]byte, error) {
	return pki.NewCSR(k.Private, pkix.Name{CommonName: cn, Organization: orgs})
}

// CheckCSR parses a PEM certificate request and checks that its signature is valid, that its
// common name is cn, that every organization it names is in orgs (the API server takes them as
// the user's groups: a request naming system:masters would make its holder a cluster
// administrator) and, when pub is given, that it is for that public key. It returns the request.
func CheckCSR(data []byte, cn string, orgs []string, pub ed25519.PublicKey) (*x509.CertificateRequest, error) {
	req, err := pki.ParseCSRPEM(data)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
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

// ParseCertificate parses the first certificate of a PEM bundle: the certificate a Tenant's or
// an Identity's signer issued.
func ParseCertificate(data []byte) (*x509.Certificate, error) {
	return pki.ParseCertPEM(data)
}

// CertificateMatchesCSR tells whether a certificate is for the public key of a PEM request.
func CertificateMatchesCSR(cert *x509.Certificate, csr []byte) bool {
	req, err := pki.ParseCSRPEM(csr)
	if err != nil {
		return false
	}
	want, ok := req.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && want.Equal(cert.PublicKey)
}

// ResourceSliceCommonName is the common name of the certificate request of a consumer's
// ResourceSlice, as upstream Liqo makes it: the slice's name, a dash, and the hex of the first
// 6 bytes of the SHA-256 of the consumer's cluster ID (a short, unique user name on the provider).
func ResourceSliceCommonName(slice, consumerID string) string {
	sum := sha256.Sum256([]byte(consumerID))
	return fmt.Sprintf("%s-%x", slice, sum[:6])
}

// ResourceSliceCSR makes the PEM certificate request of the consumer consumerID's ResourceSlice
// slice, signed with the key pair (the cluster's own): common name ResourceSliceCommonName,
// organization (the user's group on the provider) the consumer's cluster ID, as upstream Liqo's
// consumers fill the slice's spec.csr.
func (k *KeyPair) ResourceSliceCSR(slice, consumerID string) ([]byte, error) {
	return k.CSR(ResourceSliceCommonName(slice, consumerID), consumerID)
}

// CheckResourceSliceCSR checks the spec.csr of the consumer consumerID's ResourceSlice slice as
// upstream Liqo's provider does: a valid request, for the public key pub the handshake verified
// (nil: not checked, the tenant tolerating no handshake), with common name
// ResourceSliceCommonName and the consumer's cluster ID as its only organization.
func CheckResourceSliceCSR(data []byte, slice, consumerID string, pub ed25519.PublicKey) (*x509.CertificateRequest, error) {
	req, err := CheckCSR(data, ResourceSliceCommonName(slice, consumerID), []string{consumerID}, pub)
	if err != nil {
		return nil, err
	}
	if len(req.Subject.Organization) != 1 {
		return nil, fmt.Errorf("certificate request names organizations %v, want exactly [%s] (the consumer's cluster ID)",
			req.Subject.Organization, consumerID)
	}
	return req, nil
}
