package tenant_test

import (
	"context"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/nonce"
	"github.com/peerkit/terraform-provider-liqo/controllers/tenant"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestTolerateNoHandshake: a Tenant with authzPolicy TolerateNoHandshake gets its identity
// without a valid signed nonce (none at all, or a wrong one), and the issued certificate works
// in its tenant namespace; the same wrong signature under KeysExchange is refused.
func TestTolerateNoHandshake(t *testing.T) {
	prov := loneProvider.Env(t).Cluster("provider")
	ctx := t.Context()
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		if err := (&nonce.ProviderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err // nonces exist: the wrong signatures are checked against one
		}
		return (&tenant.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tenant"),
			APIServerURL: prov.Config.Host, CAData: prov.Config.CAData}).SetupWithManager(mgr)
	})

	type consumer struct {
		id      string
		policy  authv1beta1.AuthzPolicy
		wrong   bool     // a wrong signature (else none at all)
		orgs    []string // organizations (groups) the CSR asks for
		key     *signing.KeyPair
		csr     []byte
		tenant  *authv1beta1.Tenant
		tenantN string // its tenant namespace
	}
	consumers := []*consumer{
		{id: "cl-unsigned", policy: authv1beta1.TolerateNoHandshake},
		{id: "cl-wrong", policy: authv1beta1.TolerateNoHandshake, wrong: true},
		{id: "cl-strict", policy: authv1beta1.KeysExchange, wrong: true},
		// No handshake to pass, but a group no consumer may have.
		{id: "cl-masters", policy: authv1beta1.TolerateNoHandshake, orgs: []string{consts.ConsumerGroup, "system:masters"}},
	}
	for _, c := range consumers {
		c.tenantN = "liqo-tenant-" + c.id
		if err := prov.Client.Create(ctx, tenantNamespace(c.tenantN, c.id)); err != nil {
			t.Fatal(err)
		}
		var err error
		if c.key, err = signing.Generate(); err != nil {
			t.Fatal(err)
		}
		if c.csr, err = c.key.CSR(c.id, c.orgs...); err != nil {
			t.Fatal(err)
		}
		c.tenant = &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: c.tenantN, Name: c.id}, Spec: authv1beta1.TenantSpec{
			ClusterID: corev1beta1.ClusterID(c.id), AuthzPolicy: c.policy, TenantCondition: authv1beta1.TenantConditionActive, CSR: c.csr}}
		if c.wrong {
			c.tenant.Spec.PublicKey = c.key.Public
			c.tenant.Spec.Signature = []byte("not the signature of the nonce")
		}
	}
	for _, c := range consumers {
		if err := peering.AskNonce(ctx, prov.Client, c.tenantN, c.id); err != nil {
			t.Fatal(err)
		}
		testenv.Poll(t, "the nonce in "+c.tenantN, 45*time.Second, func(ctx context.Context) (bool, error) {
			n := &corev1.Secret{}
			return prov.Client.Get(ctx, client.ObjectKey{Namespace: c.tenantN, Name: consts.NonceSecret}, n) == nil && len(n.Data[consts.NonceKey]) > 0, nil
		})
		if err := prov.Client.Create(ctx, c.tenant); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range consumers[:2] {
		tn := c.tenant
		testenv.Poll(t, c.id+"'s certificate", 45*time.Second, func(ctx context.Context) (bool, error) {
			err := prov.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn)
			return err == nil && tn.Status.AuthParams != nil && len(tn.Status.AuthParams.SignedCRT) > 0, nil
		})
		cert, err := signing.ParseCertificate(tn.Status.AuthParams.SignedCRT)
		if err != nil {
			t.Fatal(err)
		}
		if cert.Subject.CommonName != c.id || !signing.CertificateMatchesCSR(cert, c.csr) {
			t.Errorf("%s: certificate for %q, matching the request: %v", c.id, cert.Subject.CommonName, signing.CertificateMatchesCSR(cert, c.csr))
		}
		keyPEM, err := c.key.EncodePrivate()
		if err != nil {
			t.Fatal(err)
		}
		peer, err := client.New(&rest.Config{Host: tn.Status.AuthParams.APIServer, TLSClientConfig: rest.TLSClientConfig{
			CAData: tn.Status.AuthParams.CA, CertData: tn.Status.AuthParams.SignedCRT, KeyData: keyPEM}},
			client.Options{Scheme: prov.Client.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		testenv.Poll(t, c.id+"'s certificate working in its tenant namespace", 45*time.Second, func(ctx context.Context) (bool, error) {
			return peer.List(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(c.tenantN)) == nil, nil
		})
	}

	strict := consumers[2].tenant
	expectEvent(t, prov.Client, strict, "SignatureInvalid")
	if err := prov.Client.Get(ctx, client.ObjectKeyFromObject(strict), strict); err != nil || strict.Status.AuthParams != nil {
		t.Errorf("KeysExchange tenant with a wrong signature got credentials: %+v %v", strict.Status.AuthParams, err)
	}
	masters := consumers[3].tenant
	expectEvent(t, prov.Client, masters, "CSRInvalid")
	if err := prov.Client.Get(ctx, client.ObjectKeyFromObject(masters), masters); err != nil || masters.Status.AuthParams != nil {
		t.Errorf("tenant asking for group system:masters got credentials: %+v %v", masters.Status.AuthParams, err)
	}
	csrs := &certificatesv1.CertificateSigningRequestList{}
	if err := prov.Client.List(ctx, csrs, client.MatchingLabels{consts.RemoteClusterIDLabel: "cl-masters"}); err != nil {
		t.Fatal(err)
	}
	if len(csrs.Items) > 0 {
		t.Errorf("a CertificateSigningRequest was made for the request naming system:masters: %s", csrs.Items[0].Name)
	}
}
