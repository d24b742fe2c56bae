package webhookserver_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/webhookserver"
)

// issue makes a CA and a serving certificate it signs for ip, as cert-manager would put them
// in a Secret: ca.crt, tls.crt, tls.key (no CA key).
func issue(t *testing.T, ip string) map[string][]byte {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.ParseIP(ip)}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		webhookserver.CACertKey:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		webhookserver.TLSCertKey: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		webhookserver.TLSKeyKey:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

// TestProvidedSecret: with a Secret someone else keeps (SecretProvided), the server refuses to
// start while it is missing or does not cover the webhook's host, naming it; once it is there
// the API server calls the webhook trusting the Secret's ca.crt; the server never writes that
// Secret nor makes its own; a renewal (new CA and certificate) is picked up at the next check.
func TestProvidedSecret(t *testing.T) {
	cl, direct := webhookCluster(t)
	ctx := t.Context()
	port := strconv.Itoa(freePort(t))
	opts := webhookserver.Options{URL: "https://127.0.0.1:" + port, BindAddress: "127.0.0.1:" + port, CheckInterval: 500 * time.Millisecond,
		SecretNamespace: consts.LiqoNamespace, SecretName: "liqo-webhook-tls", SecretProvided: true}
	key := client.ObjectKey{Namespace: consts.LiqoNamespace, Name: "liqo-webhook-tls"}

	startOnce := func() error {
		ws, err := webhookserver.New(direct, opts)
		if err != nil {
			t.Fatal(err)
		}
		ws.Register("/deny", denyForbidden)
		ws.AddValidating("liqo-webhook-test", "/deny", testWebhook())
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return ws.Start(sctx)
	}
	if err := startOnce(); err == nil || !strings.Contains(err.Error(), key.String()+", said to be provided, does not exist") {
		t.Errorf("without the Secret: %v", err)
	}
	wrong := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Type: corev1.SecretTypeTLS, Data: issue(t, "127.0.0.2")}
	if err := cl.Client.Create(ctx, wrong); err != nil {
		t.Fatal(err)
	}
	if err := startOnce(); err == nil || !strings.Contains(err.Error(), "does not cover 127.0.0.1") {
		t.Errorf("with a certificate for another host: %v", err)
	}

	wrong.Data = issue(t, "127.0.0.1")
	if err := cl.Client.Update(ctx, wrong); err != nil {
		t.Fatal(err)
	}
	secret := wrong
	startServer(t, cl, direct, opts)
	denied := func(ctx context.Context) bool {
		err := cl.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "checked", Name: "forbidden"}}, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "refused by the test webhook")
	}
	testenv.Eventually(t, "the API server to call the webhook with the provided certificate", 30*time.Second, denied)
	caBundle := func(ctx context.Context) []byte {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := cl.Client.Get(ctx, client.ObjectKey{Name: "liqo-webhook-test"}, vwc); err != nil {
			return nil
		}
		return vwc.Webhooks[0].ClientConfig.CABundle
	}
	if !bytes.Equal(caBundle(ctx), secret.Data[webhookserver.CACertKey]) {
		t.Error("the caBundle is not the provided Secret's ca.crt")
	}
	got := &corev1.Secret{}
	if err := cl.Client.Get(ctx, key, got); err != nil || got.ResourceVersion != secret.ResourceVersion {
		t.Errorf("the provided Secret was written: %v", err)
	}
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: webhookserver.DefaultSecretName}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the server made its own certificate Secret too: %v", err)
	}

	// Renewed by its keeper, under a new CA: served and trusted at the next check.
	renewed := issue(t, "127.0.0.1")
	secret.Data = renewed
	if err := cl.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the renewed CA in the webhook configuration", 30*time.Second, func(ctx context.Context) bool {
		return bytes.Equal(caBundle(ctx), renewed[webhookserver.CACertKey])
	})
	testenv.Eventually(t, "the webhook answering with the renewed certificate", 30*time.Second, denied)
}
