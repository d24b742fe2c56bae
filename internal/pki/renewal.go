package pki

import (
	"crypto/x509"
	"time"
)

// When certificates issued through the CSR API are renewed. The signer decides a certificate's
// lifetime (kube-controller-manager caps the requested one at --cluster-signing-duration and
// at its CA's expiry, and backdates NotBefore by 5 minutes), so the renewal time is read from
// the issued certificate itself, never from what was requested; and since a signer may return
// a certificate that is already due (or expired), a floor between two requests keeps the rate
// bounded whatever it returns.

// DefaultMinRenewalInterval is the least time between two certificate requests of one
// renewer (one Tenant, one virtual node), whatever the issued certificates say.
const DefaultMinRenewalInterval = time.Minute

// RenewAt is when cert is due for renewal: once two thirds of its lifetime (NotBefore to
// NotAfter) have passed, upstream Liqo's rule (its local renewer renews an identity at
// NotAfter - lifetime/3).
func RenewAt(cert *x509.Certificate) time.Time {
	return cert.NotAfter.Add(-cert.NotAfter.Sub(cert.NotBefore) / 3)
}

// NextRenewal is when to ask again for a certificate due at renewAt, the last request having
// been made at lastRequest (zero: none known): renewAt, but never sooner than minInterval
// after lastRequest (DefaultMinRenewalInterval when minInterval is zero or less).
func NextRenewal(renewAt, lastRequest time.Time, minInterval time.Duration) time.Time {
	if minInterval <= 0 {
		minInterval = DefaultMinRenewalInterval
	}
	if lastRequest.IsZero() {
		return renewAt
	}
	if floor := lastRequest.Add(minInterval); renewAt.Before(floor) {
		return floor
	}
	return renewAt
}
