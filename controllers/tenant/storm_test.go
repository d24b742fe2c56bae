package tenant_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/tenant"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/pki"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// stormTenants are the consumers of the renewal-storm tests.
var stormTenants = []string{"cl-one", "cl-two"}

// issueUnderSigner starts a provider whose kube-controller-manager signs with
// --cluster-signing-duration=signingDuration (so every certificate lives at most that long after its
// issuance, whatever the tenant controller asks for: 365 days), runs the tenant controller with
// minInterval, creates one Active Tenant per stormTenants (TolerateNoHandshake: no nonce to
// sign), waits until each has a certificate, and returns the cluster.
func issueUnderSigner(t *testing.T, signingDuration, minInterval time.Duration) *testenv.Cluster {
	t.Helper()
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider", ControllerManager: true,
		ControllerManagerArgs: []string{"--cluster-signing-duration=" + signingDuration.String()}})
	prov := env.Cluster("provider")
	ctx := t.Context()
	if _, err := clusteridentity.Ensure(ctx, prov.Client, clusteridentity.Config{ClusterID: "cl-provider"}); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		return (&tenant.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tenant"),
			APIServerURL: prov.Config.Host, CAData: prov.Config.CAData, MinRenewalInterval: minInterval}).SetupWithManager(mgr)
	})
	for _, id := range stormTenants {
		ns := "liqo-tenant-" + id
		if err := prov.Client.Create(ctx, tenantNamespace(ns, id)); err != nil {
			t.Fatal(err)
		}
		key, err := signing.Generate()
		if err != nil {
			t.Fatal(err)
		}
		csr, err := key.CSR(id)
		if err != nil {
			t.Fatal(err)
		}
		tn := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id}, Spec: authv1beta1.TenantSpec{
			ClusterID: corev1beta1.ClusterID(id), AuthzPolicy: authv1beta1.TolerateNoHandshake,
			TenantCondition: authv1beta1.TenantConditionActive, CSR: csr}}
		if err := prov.Client.Create(ctx, tn); err != nil {
			t.Fatal(err)
		}
		testenv.Poll(t, id+"'s first certificate", 45*time.Second, func(ctx context.Context) (bool, error) {
			err := prov.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn)
			return err == nil && tn.Status.AuthParams != nil && len(tn.Status.AuthParams.SignedCRT) > 0, nil
		})
	}
	return prov
}

// csrTimes returns, per tenant, when each of its CSRs was created, oldest first.
func csrTimes(t *testing.T, c client.Client) map[string][]time.Time {
	t.Helper()
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := c.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	out := map[string][]time.Time{}
	for _, csr := range list.Items {
		id := csr.Labels[consts.RemoteClusterIDLabel]
		out[id] = append(out[id], csr.CreationTimestamp.Time)
	}
	for id := range out {
		slices.SortFunc(out[id], time.Time.Compare)
	}
	return out
}

// TestNoRenewalStormUnderCappedSigner: a signer that caps certificates at 30 days (below a
// third of the 365 days asked for, as a CA expiring in 30 days does) gets one request per
// tenant, not a storm (the old rule, renewing when less than a third of the requested validity
// is left, renewed at once, forever: 2960 CSRs in 2.5 minutes); the Event of each issuance
// says the renewal is due at two thirds of the issued certificate's own lifetime.
func TestNoRenewalStormUnderCappedSigner(t *testing.T) {
	const capped = 30 * 24 * time.Hour
	prov := issueUnderSigner(t, capped, 0)
	// The storm this guards against made about 20 requests a second: 3 s show it as well as a
	// longer wait would.
	const window = 3 * time.Second
	time.Sleep(window)
	times := csrTimes(t, prov.Client)
	total := 0
	for _, id := range stormTenants {
		total += len(times[id])
		if len(times[id]) != 1 {
			t.Errorf("%s: %d CSRs within %s of its first certificate under a 30-day signer, want 1", id, len(times[id]), window)
		}
	}
	t.Logf("CSRs %s after the first certificates, under --cluster-signing-duration=%s: %d for %d tenants", window, capped, total, len(stormTenants))

	for _, id := range stormTenants {
		tn := &authv1beta1.Tenant{}
		if err := prov.Client.Get(t.Context(), client.ObjectKey{Namespace: "liqo-tenant-" + id, Name: id}, tn); err != nil {
			t.Fatal(err)
		}
		cert, err := signing.ParseCertificate(tn.Status.AuthParams.SignedCRT)
		if err != nil {
			t.Fatal(err)
		}
		if life := cert.NotAfter.Sub(cert.NotBefore); life > capped+time.Hour || life < capped-time.Hour {
			t.Errorf("%s: certificate valid for %s, want the signer's cap, %s", id, life, capped)
		}
		due := pki.RenewAt(cert)
		if want := cert.NotBefore.Add(cert.NotAfter.Sub(cert.NotBefore) * 2 / 3); due.Sub(want).Abs() > time.Second {
			t.Errorf("%s: renewal at %s, want two thirds of its lifetime, %s", id, due, want)
		}
		note := issuedNote(t, prov.Client, tn)
		if !strings.Contains(note, "renewal due at "+due.UTC().Format(time.RFC3339)) {
			t.Errorf("%s: Event %q does not give the renewal time %s (two thirds of %s to %s)", id, note, due.UTC().Format(time.RFC3339),
				cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339))
		}
	}
}

// TestNoRenewalStormUnderSecondsLongCertificates: a signer issuing certificates that live 10
// seconds (each is due for renewal as soon as it is issued, the signer backdating it by 5
// minutes) gets at most one request per tenant per MinRenewalInterval (here 4 s), each at
// least that long after the previous one, and the tenants keep being renewed.
func TestNoRenewalStormUnderSecondsLongCertificates(t *testing.T) {
	const minInterval = 4 * time.Second
	prov := issueUnderSigner(t, 10*time.Second, minInterval)
	// Long enough for two renewals after the first certificate (at 4 and 8 s), with a margin
	// for a loaded machine: what shows that renewals go on, one interval apart at least.
	const window = 13 * time.Second
	time.Sleep(window)
	times := csrTimes(t, prov.Client)
	for _, id := range stormTenants {
		ts := times[id]
		t.Logf("%s: %d CSRs in about %s (first certificate included)", id, len(ts), window)
		// The first request, then one per interval at most; and renewals go on.
		if maxN := 2 + int(window/minInterval); len(ts) > maxN || len(ts) < 3 {
			t.Errorf("%s: %d CSRs in about %s with a minimum interval of %s, want 3 to %d", id, len(ts), window, minInterval, maxN)
		}
		for i := 1; i < len(ts); i++ {
			// Creation times have a resolution of a second.
			if gap := ts[i].Sub(ts[i-1]); gap < minInterval-time.Second {
				t.Errorf("%s: CSR %d made %s after the previous one, want at least %s", id, i, gap, minInterval)
			}
		}
	}
}

// issuedNote returns the note of the newest IdentityIssued Event of a Tenant.
func issuedNote(t *testing.T, c client.Client, tn *authv1beta1.Tenant) string {
	t.Helper()
	var note string
	testenv.Poll(t, "the IdentityIssued Event of "+tn.Name, 30*time.Second, func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := c.List(ctx, list, client.InNamespace(tn.Namespace)); err != nil {
			return false, err
		}
		var newest time.Time
		for _, e := range list.Items {
			if e.Regarding.Name == tn.Name && e.Reason == "IdentityIssued" && !e.CreationTimestamp.Time.Before(newest) {
				newest, note = e.CreationTimestamp.Time, e.Note
			}
		}
		return note != "", nil
	})
	return note
}
