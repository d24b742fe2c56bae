package upstream

import (
	"context"
	"crypto/x509/pkix"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// StartWebhook runs upstream's webhook for cl as a process, with the arguments the chart
// rendered in objs gives it except --secret-name: the API server calls a process on this machine
// at 127.0.0.1, which upstream's own certificate (made for the Service's DNS names) does not
// name. Instead the test makes a CA and a serving certificate for 127.0.0.1, puts them where
// controller-runtime reads them (under the process's own TMPDIR, so that two webhooks on one
// machine do not share them), and creates the chart's webhook configurations with each webhook
// pointed at https://127.0.0.1:<port><path> and the test's CA. It returns once the webhook
// accepts connections.
func StartWebhook(tb testing.TB, cl *testenv.Cluster, objs []*unstructured.Unstructured, extra ...string) *Process {
	tb.Helper()
	ca, err := pki.NewCA("upstream-webhook-ca", time.Hour, time.Now())
	if err != nil {
		tb.Fatalf("upstream webhook of %s: %v", cl.Name, err)
	}
	serving, err := ca.Issue(pki.Template{Subject: pkix.Name{CommonName: "127.0.0.1"}, Usage: pki.Serving, Hosts: []string{"127.0.0.1"}, Lifetime: time.Hour, Now: time.Now()})
	if err != nil {
		tb.Fatalf("upstream webhook of %s: serving certificate: %v", cl.Name, err)
	}
	keyPEM, err := serving.KeyPEM()
	if err != nil {
		tb.Fatalf("upstream webhook of %s: serving key: %v", cl.Name, err)
	}
	tmp := tb.TempDir()
	certs := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		tb.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": serving.CertPEM(), "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(certs, name), data, 0o600); err != nil {
			tb.Fatalf("upstream webhook of %s: %v", cl.Name, err)
		}
	}
	addr := freeAddr(tb, Webhook)
	_, port, _ := strings.Cut(addr, ":")
	probe := freeAddr(tb, Webhook)
	args := slices.DeleteFunc(Args(tb, objs, "liqo-webhook"), func(a string) bool { return strings.HasPrefix(a, "--secret-name=") })
	args = append(args, "--webhook-port="+port, "--metrics-address=0", "--health-probe-address="+probe)
	p := start(tb, cl, Webhook, []string{"TMPDIR=" + tmp}, nil, append(args, extra...)...)
	p.waitUntil(tb, "serving", func(ctx context.Context) bool {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return false
		}
		_ = conn.Close()
		return testenv.ProbeOK(ctx, probe, "/readyz")
	})
	registerWebhooks(tb, cl, objs, "https://"+addr, ca.CertPEM())
	return p
}

// registerWebhooks creates the webhook configurations among objs in cl with each webhook's
// Service replaced by base+path and caBundle.
func registerWebhooks(tb testing.TB, cl *testenv.Cluster, objs []*unstructured.Unstructured, base string, caBundle []byte) {
	tb.Helper()
	for _, o := range objs {
		if o.GetKind() != "MutatingWebhookConfiguration" && o.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		o = o.DeepCopy()
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			hook := h.(map[string]any)
			path, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
			hook["clientConfig"] = map[string]any{"url": base + path, "caBundle": base64.StdEncoding.EncodeToString(caBundle)}
		}
		if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
			tb.Fatalf("upstream %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		if err := cl.Client.Create(tb.Context(), o); err != nil {
			tb.Fatalf("creating upstream %s %s in cluster %s: %v", o.GetKind(), o.GetName(), cl.Name, err)
		}
	}
}
