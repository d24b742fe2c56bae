// Package clientcert issues a consumer's client certificates on the provider through the CSR API
// (signer kubernetes.io/kube-apiserver-client), approved by the controller that checked the
// request, and renews them: the Tenant's control-plane certificate and the ResourceSlices' ones
// go the same way.
package clientcert

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// DefaultValidity is what certificates are requested for when Issuer.Validity is zero.
const DefaultValidity = 365 * 24 * time.Hour

// Issuer issues and renews client certificates through the CSR API.
type Issuer struct {
	// Client reads and writes the provider cluster (CSRs and their approval).
	Client client.Client
	// Validity is what certificates are requested for (DefaultValidity when zero; the CSR
	// API's minimum is 10 minutes, and the signer may cap it).
	Validity time.Duration
	// RenewBefore, when set, renews a certificate that long before it expires; zero: once two
	// thirds of the issued certificate's own lifetime have passed (pki.RenewAt, upstream's rule).
	RenewBefore time.Duration
	// MinRenewalInterval is the least time between two requests of one holder
	// (pki.DefaultMinRenewalInterval when zero).
	MinRenewalInterval time.Duration
}

// Holder is whose certificate is issued.
type Holder struct {
	// Prefix starts the names of the holder's CSR objects; one object per request content and
	// renewal follows it.
	Prefix string
	// Labels are set on the holder's CSR objects.
	Labels map[string]string
	// Selector selects the holder's CSR objects (their creation times bound the renewal rate).
	Selector labels.Selector
	// Request is the PEM certificate request, already checked.
	Request []byte
	// Current is the certificate in force (PEM), nil when none.
	Current []byte
	// Describe names the holder in errors and in the approval message ("tenant ns/name").
	Describe string
	// Reason is the reason of the approval condition.
	Reason string
}

func (i *Issuer) validity() time.Duration {
	if i.Validity > 0 {
		return i.Validity
	}
	return DefaultValidity
}

// Ensure returns the holder's certificate and when it is due for renewal: Current while it is
// for the request and not due, else a new one issued through a CSR object. A nil certificate
// means it is not signed yet (look again shortly).
func (i *Issuer) Ensure(ctx context.Context, h Holder) (cert []byte, due time.Time, err error) {
	name, due, err := i.toIssue(ctx, h)
	if err != nil || name == "" {
		return h.Current, due, err
	}
	cert, requested, err := i.issue(ctx, h, name)
	if err != nil || cert == nil {
		return nil, time.Time{}, err
	}
	issued, err := signing.ParseCertificate(cert)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("certificate signed for %s: %w", h.Describe, err)
	}
	if due, err = i.Renewal(ctx, h, issued, requested); err != nil {
		return nil, time.Time{}, err
	}
	return cert, due, nil
}

// toIssue returns the CSR object to issue the certificate through, or "" when the current one
// is for the request and not due for renewal; due is then when it will be.
func (i *Issuer) toIssue(ctx context.Context, h Holder) (name string, due time.Time, err error) {
	if len(h.Current) == 0 {
		return objectName(h, nil), time.Time{}, nil
	}
	cert, err := signing.ParseCertificate(h.Current)
	if err != nil || !signing.CertificateMatchesCSR(cert, h.Request) {
		return objectName(h, nil), time.Time{}, nil // an unusable certificate is replaced
	}
	if due, err = i.Renewal(ctx, h, cert, time.Time{}); err != nil || time.Now().Before(due) {
		return "", due, err
	}
	return objectName(h, cert.SerialNumber.Bytes()), due, nil
}

// Renewal is when cert is to be renewed: at two thirds of its own lifetime (or RenewBefore
// before it expires), and never sooner than MinRenewalInterval after the holder's last request:
// the newest of requested and the creation of its CSR objects (which the API server stamps, so
// the floor holds across restarts).
func (i *Issuer) Renewal(ctx context.Context, h Holder, cert *x509.Certificate, requested time.Time) (time.Time, error) {
	at := pki.RenewAt(cert)
	if i.RenewBefore > 0 {
		at = cert.NotAfter.Add(-i.RenewBefore)
	}
	csrs := &certificatesv1.CertificateSigningRequestList{}
	if err := i.Client.List(ctx, csrs, client.MatchingLabelsSelector{Selector: h.Selector}); err != nil {
		return time.Time{}, fmt.Errorf("listing the CSRs of %s: %w", h.Describe, err)
	}
	for j := range csrs.Items {
		if c := csrs.Items[j].CreationTimestamp.Time; c.After(requested) {
			requested = c
		}
	}
	return pki.NextRenewal(at, requested, i.MinRenewalInterval), nil
}

// objectName is the CSR object of a request: one per request content, and one per renewal
// (named after the serial number of the certificate it replaces).
func objectName(h Holder, renewing []byte) string {
	sum := sha256.Sum256(h.Request)
	name := fmt.Sprintf("%s-%s", h.Prefix, hex.EncodeToString(sum[:])[:10])
	if renewing != nil {
		serial := sha256.Sum256(renewing)
		name += "-" + hex.EncodeToString(serial[:])[:8]
	}
	return name
}

// issue creates and approves the CSR object and returns the certificate (nil until it is
// signed) and when the object was made.
func (i *Issuer) issue(ctx context.Context, h Holder, name string) (cert []byte, requested time.Time, err error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	err = i.Client.Get(ctx, client.ObjectKey{Name: name}, csr)
	if apierrors.IsNotFound(err) {
		seconds := int32(i.validity().Seconds())
		csr = &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: h.Labels},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request: h.Request, SignerName: certificatesv1.KubeAPIServerClientSignerName,
				ExpirationSeconds: &seconds,
				Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			},
		}
		if err := i.Client.Create(ctx, csr); err != nil {
			return nil, time.Time{}, fmt.Errorf("creating CSR %s for %s: %w", name, h.Describe, err)
		}
	} else if err != nil {
		return nil, time.Time{}, fmt.Errorf("reading CSR %s: %w", name, err)
	}
	approved := false
	for _, c := range csr.Status.Conditions {
		switch {
		case c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue:
			approved = true
		case (c.Type == certificatesv1.CertificateFailed || c.Type == certificatesv1.CertificateDenied) && c.Status == corev1.ConditionTrue:
			// Retried with the controller's backoff; the same request is asked again once the
			// cluster's CSR cleaner removes this one (an hour after it failed).
			return nil, time.Time{}, fmt.Errorf("CSR %s of %s %s: %s (%s)", name, h.Describe, c.Type, c.Message, c.Reason)
		}
	}
	if !approved {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: h.Reason,
			Message: h.Describe + " verified",
		})
		if err := i.Client.SubResource("approval").Update(ctx, csr); err != nil {
			return nil, time.Time{}, fmt.Errorf("approving CSR %s: %w", name, err)
		}
	}
	return csr.Status.Certificate, csr.CreationTimestamp.Time, nil
}
