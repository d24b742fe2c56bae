package agent

import (
	"strings"
	"testing"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// TestReconcileReportsFailures: before anything is applied, waiting for an object reads
// Connecting and a broken object reads Error, and the reason is kept for the retry; once a
// state is applied, waiting leaves the status alone (the tunnel keeps running on what it has).
// Nothing here reaches apply: the host is not touched.
func TestReconcileReportsFailures(t *testing.T) {
	cl := testCluster(t)
	c, ctx := cl.Client, t.Context()
	ns := newTenant(t, cl)
	a := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server"})

	a.reconcile(ctx)
	if conn := mustConnection(t, a, "server"); conn.Status.Value != netv1beta1.Connecting {
		t.Errorf("waiting for the GatewayServer: status %q, want Connecting", conn.Status.Value)
	}
	if !strings.Contains(a.lastErr, "waiting for GatewayServer "+ns+"/server") {
		t.Errorf("lastErr = %q, want the GatewayServer waited for", a.lastErr)
	}

	peer := publicKey(ns, "peer", newKey(t).PublicKey())
	peer.Spec.PublicKey = []byte(strings.Repeat("?", 44))
	create(t, c, gatewayServer(ns, "server", "keys", 51840, 0), keySecret(ns, "keys", newKey(t)), peer,
		configuration(ns, "peer", "10.2.0.0/16"))
	a.reconcile(ctx)
	if conn := mustConnection(t, a, "server"); conn.Status.Value != netv1beta1.ConnectionError {
		t.Errorf("with a broken PublicKey: status %q, want Error", conn.Status.Value)
	}
	if !strings.Contains(a.lastErr, "PublicKey peer") {
		t.Errorf("lastErr = %q, want the broken PublicKey", a.lastErr)
	}

	a.applied = &desired{} // as if a state had been applied before
	if err := c.Delete(ctx, peer); err != nil {
		t.Fatal(err)
	}
	rv := mustConnection(t, a, "server").ResourceVersion
	a.reconcile(ctx)
	if conn := mustConnection(t, a, "server"); conn.ResourceVersion != rv || conn.Status.Value != netv1beta1.ConnectionError {
		t.Errorf("waiting after a state was applied wrote status %q", conn.Status.Value)
	}
	if !strings.Contains(a.lastErr, "exactly one PublicKey") {
		t.Errorf("lastErr = %q, want the missing PublicKey", a.lastErr)
	}
}

// TestProbeBeforeApply: without a tunnel there is nothing to probe and nothing to report.
func TestProbeBeforeApply(t *testing.T) {
	cl := testCluster(t)
	ns := newTenant(t, cl)
	a := newTestAgent(t, cl, Options{Mode: ModeClient, Namespace: ns, GatewayName: "client"})
	a.probe(t.Context())
	if _, err := getConnection(t.Context(), cl.Client, ns, "client"); err == nil || a.failures != 0 {
		t.Errorf("probe without a tunnel wrote a Connection or counted a failure (%d)", a.failures)
	}
}
