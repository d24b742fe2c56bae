package negotiation_test

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/identity"
	"github.com/peerkit/terraform-provider-liqo/controllers/negotiation"
	"github.com/peerkit/terraform-provider-liqo/controllers/nonce"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// sliceCertificates (on TestNegotiation's cluster, which is then also the consumer cl-b of
// a provider cl-prov, the replication done by hand): the consumer's controllers fill a slice's
// provider and spec.csr (for this cluster's ID, which the replication writes on the copy); the provider checks the request against its Tenant's public
// key, signs it through the CSR API and answers in status.authParams (its CA and API server, the
// tenant's proxy URL), renewing it when due; the consumer makes the Identity
// resourceslice-<slice> from it, whose kubeconfig authenticates as the request's user in the
// consumer's group. A request signed by another key, or for another slice, is refused with
// reason CSRInvalid naming the slice and spec.csr, and nothing is granted from it; a denied
// slice loses its Identity.
func sliceCertificates(t *testing.T, cl *testenv.Cluster) {
	ctx, c := t.Context(), cl.Client
	if _, err := clusteridentity.Ensure(ctx, c, clusteridentity.Config{ClusterID: "cl-b"}); err != nil {
		t.Fatal(err)
	}
	key, _, err := nonce.LocalIdentity(ctx, c, consts.LiqoNamespace)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := key.EncodePublic()
	if err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		if err := (&identity.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&identity.SliceReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})
	for _, ns := range []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "t-b"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-cl-prov", Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-prov"}}}} {
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	const proxy = "http://proxy.example:8118"
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "t-b", Name: "cl-b"},
		Spec: authv1beta1.TenantSpec{ClusterID: "cl-b", TenantCondition: authv1beta1.TenantConditionActive, PublicKey: pub, ProxyURL: proxy}}
	if err := c.Create(ctx, tenant); err != nil {
		t.Fatal(err)
	}

	// The consumer's request, as liqo_peering writes it: no consumer, provider or CSR.
	local := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-cl-prov", Name: "sl",
		Labels: map[string]string{consts.ReplicationLabel: "true"}},
		Spec: authv1beta1.ResourceSliceSpec{Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}
	if err := c.Create(ctx, local); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the consumer to fill the slice's certificate request", 30*time.Second, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKeyFromObject(local), local) == nil && len(local.Spec.CSR) > 0, nil
	})
	if p, q := local.Spec.ConsumerClusterID, local.Spec.ProviderClusterID; p != nil || q == nil || *q != "cl-prov" {
		t.Fatalf("consumer %v, provider %v; want none (as written) and cl-prov (the tenant namespace's)", p, q)
	}
	if _, err := signing.CheckResourceSliceCSR(local.Spec.CSR, "sl", "cl-b", key.Public); err != nil {
		t.Fatalf("the consumer's request: %v", err)
	}

	// The provider's copy (what replication writes: this cluster's ID as the consumer).
	remote := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "t-b", Name: "sl"}, Spec: *local.Spec.DeepCopy()}
	consumer := corev1beta1.ClusterID("cl-b")
	remote.Spec.ConsumerClusterID = &consumer
	if err := c.Create(ctx, remote); err != nil {
		t.Fatal(err)
	}
	first := signedCert(t, c, remote, nil)
	p := remote.Status.AuthParams
	if string(p.CA) != string(cl.Config.CAData) || p.APIServer != cl.Config.Host || p.ProxyURL != proxy {
		t.Errorf("authParams: CA %d bytes, API server %q, proxy %q; want this cluster's CA, %q and the tenant's %q",
			len(p.CA), p.APIServer, p.ProxyURL, cl.Config.Host, proxy)
	}
	if cn := signing.ResourceSliceCommonName("sl", "cl-b"); first.Subject.CommonName != cn || !slices.Equal(first.Subject.Organization, []string{"cl-b"}) {
		t.Errorf("certificate for %v, want CN %s O [cl-b]", first.Subject, cn)
	}
	renewed := signedCert(t, c, remote, first)
	if !renewed.NotAfter.After(first.NotAfter) {
		t.Errorf("renewed certificate expires %s, the first %s", renewed.NotAfter, first.NotAfter)
	}

	// Back on the consumer (what replication writes): the Identity and its kubeconfig.
	local.Status = *remote.Status.DeepCopy()
	if err := c.Status().Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	id := &authv1beta1.Identity{}
	testenv.Poll(t, "the slice's Identity and its kubeconfig", 30*time.Second, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: local.Namespace, Name: "resourceslice-sl"}, id)
		return err == nil && id.Status.KubeconfigSecretRef != nil, nil
	})
	if id.Spec.Type != authv1beta1.ResourceSliceIdentityType || id.Spec.ClusterID != "cl-prov" || id.Labels[consts.ResourceSliceNameLabel] != "sl" ||
		id.Labels[consts.RemoteClusterIDLabel] != "cl-prov" || len(id.OwnerReferences) != 1 || id.OwnerReferences[0].Name != "sl" {
		t.Errorf("Identity %+v %+v, want type ResourceSlice towards cl-prov, labelled with the slice, owned by it", id.ObjectMeta, id.Spec)
	}
	whoAmI(t, c, id)

	refused(t, c, "forged", func(s *authv1beta1.ResourceSlice) ([]byte, error) {
		other, err := signing.Generate()
		if err != nil {
			return nil, err
		}
		return other.ResourceSliceCSR(s.Name, "cl-b")
	}, "not for the public key")
	refused(t, c, "wrongcn", func(*authv1beta1.ResourceSlice) ([]byte, error) { return key.ResourceSliceCSR("sl", "cl-b") }, `is for "sl-`)

	// Denied on the provider: the consumer's Identity goes.
	local.Status.AuthParams = nil
	local.Status.Conditions = []authv1beta1.ResourceSliceCondition{{Type: authv1beta1.ResourceSliceConditionTypeAuthentication,
		Status: authv1beta1.ResourceSliceConditionDenied, Reason: negotiation.ReasonCSRInvalid, LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, local); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the denied slice's Identity to go", 30*time.Second, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(id), id)
		return client.IgnoreNotFound(err) == nil && err != nil, nil
	})
}

// signedCert waits for the slice's status.authParams to hold a certificate other than prev
// (nil: any) and returns it.
func signedCert(t *testing.T, c client.Client, s *authv1beta1.ResourceSlice, prev *x509.Certificate) *x509.Certificate {
	t.Helper()
	var cert *x509.Certificate
	testenv.Poll(t, "a certificate in ResourceSlice "+s.Name+"'s status.authParams", 45*time.Second, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil || s.Status.AuthParams == nil {
			return false, err
		}
		got, err := signing.ParseCertificate(s.Status.AuthParams.SignedCRT)
		if err != nil || (prev != nil && got.Equal(prev)) {
			return false, nil
		}
		cert = got
		return true, nil
	})
	return cert
}

// whoAmI checks that the Identity's kubeconfig authenticates as the slice's user, in the
// consumer's group (the proxy it names is not there in this test: the connection is direct).
func whoAmI(t *testing.T, c client.Client, id *authv1beta1.Identity) {
	t.Helper()
	secret := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: id.Namespace, Name: id.Status.KubeconfigSecretRef.Name}, secret); err != nil {
		t.Fatal(err)
	}
	if secret.Labels[consts.IdentityTypeLabel] != string(authv1beta1.ResourceSliceIdentityType) {
		t.Errorf("kubeconfig Secret labels %v, want %s=ResourceSlice", secret.Labels, consts.IdentityTypeLabel)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[consts.KubeconfigSecretKey])
	if err != nil {
		t.Fatal(err)
	}
	cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	as, err := client.New(cfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	review := &authnv1.SelfSubjectReview{}
	if err := as.Create(t.Context(), review); err != nil {
		t.Fatalf("the slice's kubeconfig: %v", err)
	}
	u := review.Status.UserInfo
	if u.Username != signing.ResourceSliceCommonName("sl", "cl-b") || !slices.Contains(u.Groups, "cl-b") {
		t.Errorf("the slice's kubeconfig authenticates as %q in %v, want %q in group cl-b", u.Username, u.Groups,
			signing.ResourceSliceCommonName("sl", "cl-b"))
	}
}

// refused creates a provider-side slice of cl-b whose request csr makes, and checks that it is
// refused (reason CSRInvalid, naming the slice, spec.csr and why) with nothing granted.
func refused(t *testing.T, c client.Client, name string, csr func(*authv1beta1.ResourceSlice) ([]byte, error), why string) {
	t.Helper()
	consumer, provider := corev1beta1.ClusterID("cl-b"), corev1beta1.ClusterID("cl-prov")
	s := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "t-b", Name: name},
		Spec: authv1beta1.ResourceSliceSpec{ConsumerClusterID: &consumer, ProviderClusterID: &provider,
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}
	var err error
	if s.Spec.CSR, err = csr(s); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	got := decided(t, c, s, "Authentication", "Denied", negotiation.ReasonCSRInvalid)
	msg := got.Status.Conditions[0].Message
	for _, want := range []string{"ResourceSlice t-b/" + name, "spec.csr", why} {
		if !strings.Contains(msg, want) {
			t.Errorf("slice %s refused with %q, want it to say %q", name, msg, want)
		}
	}
	got = decided(t, c, s, "Resources", "Denied", negotiation.ReasonNotAuthorized)
	if got.Status.AuthParams != nil || len(got.Status.Resources) != 0 {
		t.Errorf("slice %s with a refused request was granted %v, %+v", name, got.Status.Resources, got.Status.AuthParams)
	}
}
