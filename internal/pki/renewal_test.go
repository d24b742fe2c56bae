package pki_test

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
)

// TestRenewalTimes: a certificate is due at two thirds of its own lifetime, whatever was asked
// for; and a renewer asks again no sooner than the minimum interval after its last request,
// even for a certificate already expired or living seconds.
func TestRenewalTimes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cert := func(notBefore, notAfter time.Time) *x509.Certificate {
		return &x509.Certificate{NotBefore: notBefore, NotAfter: notAfter}
	}
	for name, tc := range map[string]struct {
		cert        *x509.Certificate
		lastRequest time.Time
		minInterval time.Duration
		want        time.Time
	}{
		// kube-controller-manager capped at 30 days: backdated 5 minutes, ends 30 days - 5 min after issuance.
		"a 30-day certificate": {cert(now.Add(-5*time.Minute), now.Add(30*24*time.Hour-5*time.Minute)), now, 0,
			now.Add(-5*time.Minute + 20*24*time.Hour)},
		"one due long ago, asked for now":     {cert(now.Add(-time.Hour), now.Add(-time.Minute)), now, 0, now.Add(pki.DefaultMinRenewalInterval)},
		"one living 10 s, backdated 5 min":    {cert(now.Add(-5*time.Minute), now.Add(10*time.Second)), now, 4 * time.Second, now.Add(4 * time.Second)},
		"no request known: its own time":      {cert(now.Add(-3*time.Hour), now), time.Time{}, 0, now.Add(-time.Hour)},
		"last request long before: its time":  {cert(now, now.Add(3*time.Hour)), now.Add(-time.Hour), 0, now.Add(2 * time.Hour)},
		"a 10-minute certificate, backdated":  {cert(now.Add(-5*time.Minute), now.Add(10*time.Minute)), now, 0, now.Add(5 * time.Minute)},
		"a renewal due right at the interval": {cert(now.Add(-2*time.Minute), now.Add(time.Minute)), now, time.Minute, now.Add(time.Minute)},
	} {
		got := pki.NextRenewal(pki.RenewAt(tc.cert), tc.lastRequest, tc.minInterval)
		if !got.Equal(tc.want) {
			t.Errorf("%s: next renewal at %s, want %s", name, got, tc.want)
		}
	}
}
