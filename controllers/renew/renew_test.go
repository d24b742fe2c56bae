package renew_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/nonce"
	"github.com/peerkit/terraform-provider-liqo/controllers/renew"
	"github.com/peerkit/terraform-provider-liqo/controllers/tenant"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// provider is the package's one provider cluster (identity cl-provider, with
// kube-controller-manager signing the CSRs), running the nonce, tenant and renew controllers.
var provider = testenv.NewShared(func(ctx context.Context, env *testenv.Env) error {
	_, err := clusteridentity.Ensure(ctx, env.Clusters[0].Client, clusteridentity.Config{ClusterID: "cl-provider"})
	return err
}, testenv.ClusterOptions{Name: "provider", ControllerManager: true})

// TestMain stops the shared cluster when the package's tests end.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunShared(m, provider))
}

const (
	consumerID = "cl-consumer"
	tenantNS   = "liqo-tenant-" + consumerID
	proxyURL   = "http://proxy.example:8118"
	waitLong   = 45 * time.Second
)

// peered is the provider with its controllers running and a consumer that passed the
// handshake: its key, and a client authenticating with the control-plane identity its Tenant
// was issued (bound to liqo-remote-controlplane in the tenant namespace).
type peered struct {
	prov   *testenv.Cluster
	key    *signing.KeyPair
	pub    []byte
	tenant *authv1beta1.Tenant
	peer   client.Client
}

// peer starts the controllers and has the consumer pass the handshake as upstream's does.
func peer(t *testing.T) *peered {
	t.Helper()
	prov := provider.Env(t).Cluster("provider")
	ctx, c := t.Context(), prov.Client
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		if err := (&nonce.ProviderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
		if err := (&tenant.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tenant"),
			APIServerURL: prov.Config.Host, CAData: prov.Config.CAData}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&renew.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("renew"),
			APIServerURL: prov.Config.Host, CAData: prov.Config.CAData}).SetupWithManager(mgr)
	})
	p := &peered{prov: prov}
	var err error
	if p.key, err = signing.Generate(); err != nil {
		t.Fatal(err)
	}
	if p.pub, err = p.key.EncodePublic(); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}}
	forge.MutateTenantNamespace(ns, consumerID)
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := peering.AskNonce(ctx, c, tenantNS, consumerID); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Secret{}
	testenv.Poll(t, "the provider's nonce", waitLong, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: consts.NonceSecret}, n) == nil && len(n.Data[consts.NonceKey]) > 0, nil
	})
	csr, err := p.key.CSR(consumerID, consts.ConsumerGroup)
	if err != nil {
		t.Fatal(err)
	}
	p.tenant = &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: consumerID}, Spec: authv1beta1.TenantSpec{
		ClusterID: consumerID, AuthzPolicy: authv1beta1.KeysExchange, TenantCondition: authv1beta1.TenantConditionActive,
		PublicKey: p.pub, Signature: p.key.Sign(n.Data[consts.NonceKey]), CSR: csr, ProxyURL: proxyURL}}
	if err := c.Create(ctx, p.tenant); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the consumer's control-plane identity", waitLong, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(p.tenant), p.tenant)
		return err == nil && p.tenant.Status.AuthParams != nil && len(p.tenant.Status.AuthParams.SignedCRT) > 0, err
	})
	keyPEM, err := p.key.EncodePrivate()
	if err != nil {
		t.Fatal(err)
	}
	a := p.tenant.Status.AuthParams
	if p.peer, err = client.New(&rest.Config{Host: a.APIServer, TLSClientConfig: rest.TLSClientConfig{CAData: a.CA,
		CertData: a.SignedCRT, KeyData: keyPEM}}, client.Options{Scheme: c.Scheme()}); err != nil {
		t.Fatal(err)
	}
	return p
}

// signed waits for the Renew's status.authParams (read with c) and checks them: this cluster's
// CA and API server, the Tenant's proxy URL, a certificate for the request's key and subject.
func (p *peered) signed(t *testing.T, c client.Client, rn *authv1beta1.Renew, cn string, orgs []string) {
	t.Helper()
	testenv.Poll(t, "Renew "+rn.Name+"'s certificate", waitLong, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(rn), rn)
		return err == nil && rn.Status.AuthParams != nil && len(rn.Status.AuthParams.SignedCRT) > 0, err
	})
	a := rn.Status.AuthParams
	if string(a.CA) != string(p.prov.Config.CAData) || a.APIServer != p.prov.Config.Host || a.ProxyURL != proxyURL {
		t.Errorf("Renew %s authParams: CA %d bytes, API server %q, proxy %q; want this cluster's CA, %q and the Tenant's %q",
			rn.Name, len(a.CA), a.APIServer, a.ProxyURL, p.prov.Config.Host, proxyURL)
	}
	cert, err := signing.ParseCertificate(a.SignedCRT)
	if err != nil {
		t.Fatalf("Renew %s status.authParams.signedCRT: %v", rn.Name, err)
	}
	if cert.Subject.CommonName != cn || !slices.Equal(cert.Subject.Organization, orgs) || !signing.CertificateMatchesCSR(cert, rn.Spec.CSR) {
		t.Errorf("Renew %s: certificate for %v (matching spec.csr: %v), want CN %s O %v", rn.Name, cert.Subject,
			signing.CertificateMatchesCSR(cert, rn.Spec.CSR), cn, orgs)
	}
}

// refused waits for the Warning Event of reason on the Renew and checks it has no authParams.
func (p *peered) refused(t *testing.T, rn *authv1beta1.Renew, reason, field string) {
	t.Helper()
	e := testenv.ExpectEvent(t, p.prov.Client, rn, reason, waitLong)
	if e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, field) {
		t.Errorf("Renew %s/%s: %s event %q, want a Warning naming %s", rn.Namespace, rn.Name, e.Type, e.Note, field)
	}
	if err := p.prov.Client.Get(t.Context(), client.ObjectKeyFromObject(rn), rn); err != nil || rn.Status.AuthParams != nil {
		t.Errorf("refused Renew %s/%s has authParams %+v (%v)", rn.Namespace, rn.Name, rn.Status.AuthParams, err)
	}
}

// TestRenew: the consumer's control plane (its issued identity) creates Renews in its tenant
// namespace and reads their status. Upstream's Renew (no spec.csr) gets a copy of the Tenant's
// status.authParams. A ControlPlane Renew with a spec.csr gets a certificate for its request
// (CN the consumer's ID, O liqo.io), a ResourceSlice Renew one for the slice's user (as the
// slice's own spec.csr would), each with this cluster's CA and API server and the Tenant's
// proxy URL. A request of another key is refused (CSRInvalid, naming spec.csr), and so is a
// ResourceSlice Renew naming no slice of the consumer. A Renew outside the consumer's tenant
// namespace (a plain namespace, another consumer's tenant namespace) is not answered
// (WrongNamespace), and the consumer may not create one there.
func TestRenew(t *testing.T) {
	p := peer(t)
	ctx, admin := t.Context(), p.prov.Client
	newRenew := func(name, ns string, typ authv1beta1.IdentityType, csr []byte) *authv1beta1.Renew {
		return &authv1beta1.Renew{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: authv1beta1.RenewSpec{
			ConsumerClusterID: consumerID, PublicKey: p.pub, CSR: csr, IdentityType: typ}}
	}
	csr, err := p.key.CSR(consumerID, consts.ConsumerGroup)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("control plane", func(t *testing.T) {
		rn := newRenew("cp", tenantNS, authv1beta1.ControlPlaneIdentityType, csr)
		if err := p.peer.Create(ctx, rn); err != nil {
			t.Fatalf("the consumer's control plane creating a Renew: %v", err)
		}
		p.signed(t, p.peer, rn, consumerID, []string{consts.ConsumerGroup})
	})

	t.Run("upstream's, without csr", func(t *testing.T) {
		// What upstream Liqo v1.2's CRD replicator writes: the consumer's permanent Renew of its
		// control-plane Identity, with no request; the answer is the Tenant's identity in force.
		rn := newRenew("upstream-cp", tenantNS, authv1beta1.ControlPlaneIdentityType, nil)
		rn.Spec.PublicKey = nil
		rn.Labels = map[string]string{consts.ReplicationLabel: "false", "liqo.io/replicated": "true", "liqo.io/originID": consumerID,
			consts.RemoteClusterIDLabel: consumerID}
		if err := p.peer.Create(ctx, rn); err != nil {
			t.Fatal(err)
		}
		testenv.Poll(t, "the Tenant's authParams in the Renew", waitLong, func(ctx context.Context) (bool, error) {
			err := p.peer.Get(ctx, client.ObjectKeyFromObject(rn), rn)
			return err == nil && rn.Status.AuthParams != nil, err
		})
		if err := admin.Get(ctx, client.ObjectKeyFromObject(p.tenant), p.tenant); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(rn.Status.AuthParams, p.tenant.Status.AuthParams) {
			t.Errorf("Renew authParams %+v, want the Tenant's %+v", rn.Status.AuthParams, p.tenant.Status.AuthParams)
		}
	})

	t.Run("resource slice", func(t *testing.T) {
		consumer := corev1beta1.ClusterID(consumerID)
		slice := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "sl"},
			Spec: authv1beta1.ResourceSliceSpec{ConsumerClusterID: &consumer}}
		if err := p.peer.Create(ctx, slice); err != nil {
			t.Fatal(err)
		}
		// What the negotiation controller writes once it authenticated the slice.
		slice.Status.Conditions = []authv1beta1.ResourceSliceCondition{{Type: authv1beta1.ResourceSliceConditionTypeAuthentication,
			Status: authv1beta1.ResourceSliceConditionAccepted, Reason: "TenantActive", LastTransitionTime: metav1.Now()}}
		if err := admin.Status().Update(ctx, slice); err != nil {
			t.Fatal(err)
		}
		sliceCSR, err := p.key.ResourceSliceCSR("sl", consumerID)
		if err != nil {
			t.Fatal(err)
		}
		rn := newRenew("sl", tenantNS, authv1beta1.ResourceSliceIdentityType, sliceCSR)
		rn.Spec.ResourceSliceRef = &corev1.LocalObjectReference{Name: "sl"}
		if err := p.peer.Create(ctx, rn); err != nil {
			t.Fatal(err)
		}
		p.signed(t, p.peer, rn, signing.ResourceSliceCommonName("sl", consumerID), []string{consumerID})

		other := newRenew("no-slice", tenantNS, authv1beta1.ResourceSliceIdentityType, sliceCSR)
		other.Spec.ResourceSliceRef = &corev1.LocalObjectReference{Name: "missing"}
		if err := p.peer.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		p.refused(t, other, renew.ReasonResourceSliceInvalid, "spec.resourceSliceRef")
	})

	t.Run("another key", func(t *testing.T) {
		stranger, err := signing.Generate()
		if err != nil {
			t.Fatal(err)
		}
		strangerCSR, err := stranger.CSR(consumerID, consts.ConsumerGroup)
		if err != nil {
			t.Fatal(err)
		}
		rn := newRenew("stranger", tenantNS, authv1beta1.ControlPlaneIdentityType, strangerCSR)
		if err := p.peer.Create(ctx, rn); err != nil {
			t.Fatal(err)
		}
		p.refused(t, rn, renew.ReasonCSRInvalid, "spec.csr")
	})

	t.Run("not its tenant namespace", func(t *testing.T) {
		plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
		other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-cl-other"}}
		forge.MutateTenantNamespace(other, "cl-other")
		for _, ns := range []*corev1.Namespace{plain, other} {
			if err := admin.Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
			rn := newRenew("cp", ns.Name, authv1beta1.ControlPlaneIdentityType, csr)
			if err := p.peer.Create(ctx, rn.DeepCopy()); !apierrors.IsForbidden(err) {
				t.Errorf("the consumer creating a Renew in namespace %s: %v, want forbidden", ns.Name, err)
			}
			if err := admin.Create(ctx, rn); err != nil {
				t.Fatal(err)
			}
			p.refused(t, rn, renew.ReasonWrongNamespace, "spec.consumerClusterID")
		}
	})
}
