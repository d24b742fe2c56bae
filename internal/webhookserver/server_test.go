package webhookserver_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/webhookserver"
)

func freePort(t *testing.T) int {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// denyForbidden refuses ConfigMaps named "forbidden".
var denyForbidden = admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
	if req.Name == "forbidden" {
		return admission.Denied("refused by the test webhook")
	}
	return admission.Allowed("")
})

func testWebhook() admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: "deny.test.liqo.io",
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
		NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"webhook-test": "true"}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

// startServer runs a manager of cl with the webhook server until the test ends or stop is
// called.
func startServer(t *testing.T, cl *testenv.Cluster, c client.Client, opts webhookserver.Options) (ws *webhookserver.Server, stop func()) {
	t.Helper()
	ws, err := webhookserver.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	ws.Register("/deny", denyForbidden)
	ws.AddValidating("liqo-webhook-test", "/deny", testWebhook())
	stop = testenv.StartManager(t, cl, func(mgr ctrl.Manager) error { return mgr.Add(ws) })
	return ws, stop
}

// webhookCluster starts a cluster with the liqo namespace and a namespace the test webhook
// checks ("checked"), and returns it with an uncached client.
func webhookCluster(t *testing.T) (*testenv.Cluster, client.Client) {
	t.Helper()
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", SkipLiqoCRDs: true})
	cl := env.Cluster("a")
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}},
		{ObjectMeta: metav1.ObjectMeta{Name: "checked", Labels: map[string]string{"webhook-test": "true"}}},
	} {
		if err := cl.Client.Create(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
	}
	direct, err := client.New(cl.Config, client.Options{Scheme: cl.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cl, direct
}

// TestServeAndRestart: the API server calls the webhook over HTTPS trusting the CA the server
// provisioned; a restarted server reuses the certificate Secret (not rewritten) and the
// caBundle; a caBundle broken behind its back is repaired by the periodic check.
func TestServeAndRestart(t *testing.T) {
	cl, direct := webhookCluster(t)
	ctx := t.Context()
	port := strconv.Itoa(freePort(t))
	opts := webhookserver.Options{URL: "https://127.0.0.1:" + port, BindAddress: "127.0.0.1:" + port, CheckInterval: 500 * time.Millisecond}
	ws, stop := startServer(t, cl, direct, opts)

	denied := func(ctx context.Context) bool {
		err := cl.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "checked", Name: "forbidden"}}, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "refused by the test webhook")
	}
	testenv.Eventually(t, "the API server to call the webhook", 30*time.Second, denied)
	if err := cl.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "checked", Name: "fine"}}); err != nil {
		t.Errorf("an allowed ConfigMap: %v", err)
	}

	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: consts.LiqoNamespace, Name: webhookserver.DefaultSecretName}
	if err := cl.Client.Get(ctx, key, secret); err != nil {
		t.Fatal(err)
	}
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %s", secret.Type)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Name: "liqo-webhook-test"}, vwc); err != nil {
		t.Fatal(err)
	}
	cc := vwc.Webhooks[0].ClientConfig
	if cc.URL == nil || *cc.URL != "https://127.0.0.1:"+port+"/deny" || !bytes.Equal(cc.CABundle, secret.Data[webhookserver.CACertKey]) ||
		!bytes.Equal(ws.CABundle(), cc.CABundle) {
		t.Errorf("client config %+v does not point at the server with the Secret's CA", cc)
	}

	stop()
	// With the server down, failurePolicy Fail refuses the checked namespace's ConfigMaps.
	if err := cl.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "checked", Name: "while-down"}}); err == nil {
		t.Error("a ConfigMap was admitted while the webhook was down (failurePolicy Fail ignored?)")
	}
	startServer(t, cl, direct, opts)
	testenv.Eventually(t, "the restarted webhook", 30*time.Second, denied)
	again := &corev1.Secret{}
	if err := cl.Client.Get(ctx, key, again); err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != secret.ResourceVersion || !bytes.Equal(again.Data[webhookserver.TLSCertKey], secret.Data[webhookserver.TLSCertKey]) {
		t.Error("the restart rewrote the certificate Secret instead of reusing it")
	}
	if err := cl.Client.Get(ctx, client.ObjectKey{Name: "liqo-webhook-test"}, vwc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(vwc.Webhooks[0].ClientConfig.CABundle, secret.Data[webhookserver.CACertKey]) {
		t.Error("the caBundle changed across the restart")
	}

	// Drift: someone breaks the caBundle; the periodic check puts it back.
	vwc.Webhooks[0].ClientConfig.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})
	if err := cl.Client.Update(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the caBundle repaired", 30*time.Second, func(ctx context.Context) bool {
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		return cl.Client.Get(ctx, client.ObjectKey{Name: "liqo-webhook-test"}, got) == nil &&
			bytes.Equal(got.Webhooks[0].ClientConfig.CABundle, secret.Data[webhookserver.CACertKey])
	})
	testenv.Eventually(t, "the webhook answering after the repair", 30*time.Second, denied)
}

// TestServiceMode: in a cluster the configurations point at the Service, and the serving
// certificate covers the Service's DNS names.
func TestServiceMode(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", SkipLiqoCRDs: true})
	cl := env.Cluster("a")
	if err := cl.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}); err != nil {
		t.Fatal(err)
	}
	direct, err := client.New(cl.Config, client.Options{Scheme: cl.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := webhookserver.ParseService("liqo/liqo-webhook")
	if err != nil || *svc != (types.NamespacedName{Namespace: "liqo", Name: "liqo-webhook"}) {
		t.Fatalf("ParseService: %v %v", svc, err)
	}
	port := strconv.Itoa(freePort(t))
	ws, err := webhookserver.New(direct, webhookserver.Options{Service: svc, BindAddress: "127.0.0.1:" + port})
	if err != nil {
		t.Fatal(err)
	}
	ws.Register("/deny", denyForbidden)
	ws.AddValidating("liqo-webhook-test", "/deny", testWebhook())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ws.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	}()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	testenv.Eventually(t, "the configuration", 30*time.Second, func(ctx context.Context) bool {
		return cl.Client.Get(ctx, client.ObjectKey{Name: "liqo-webhook-test"}, vwc) == nil
	})
	ref := vwc.Webhooks[0].ClientConfig.Service
	if ref == nil || ref.Namespace != "liqo" || ref.Name != "liqo-webhook" || *ref.Path != "/deny" || *ref.Port != 443 || vwc.Webhooks[0].ClientConfig.URL != nil {
		t.Errorf("client config %+v, want the Service liqo/liqo-webhook:443/deny", vwc.Webhooks[0].ClientConfig)
	}
	secret := &corev1.Secret{}
	if err := cl.Client.Get(t.Context(), client.ObjectKey{Namespace: "liqo", Name: webhookserver.DefaultSecretName}, secret); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(secret.Data[webhookserver.TLSCertKey])
	if block == nil {
		t.Fatal("no serving certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"liqo-webhook.liqo.svc", "liqo-webhook.liqo.svc.cluster.local"} {
		if err := cert.VerifyHostname(h); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}
	testenv.Eventually(t, "the server listening", 30*time.Second, func(ctx context.Context) bool { return ws.StartedChecker()(nil) == nil })
}

// TestOptions: exactly one of a Service and an https URL.
func TestOptions(t *testing.T) {
	for _, o := range []webhookserver.Options{
		{},
		{URL: "https://127.0.0.1:9443", Service: &types.NamespacedName{Namespace: "a", Name: "b"}},
		{URL: "http://127.0.0.1:9443"},
		{URL: "https://127.0.0.1:9443?x=1"},
		{URL: "https://127.0.0.1:9443", BindAddress: "nope"},
	} {
		if _, err := webhookserver.New(nil, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	for _, s := range []string{"", "a", "a/", "/b", "a/b/c"} {
		if _, err := webhookserver.ParseService(s); err == nil {
			t.Errorf("service %q accepted", s)
		}
	}
}
