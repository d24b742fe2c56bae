package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// mustConnection reads the Connection name in ns, failing the test when it cannot.
func mustConnection(t *testing.T, a *Agent, name string) *netv1beta1.Connection {
	t.Helper()
	conn, err := getConnection(t.Context(), a.writer, a.opts.Namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestWriteStatusCreatesAndUpdates: the first status creates the Connection, pointing at its
// gateway and owned by it; a status is written only when it changes, except Connected, whose
// latency is rewritten once it is older than latencyRefresh.
func TestWriteStatusCreatesAndUpdates(t *testing.T) {
	cl := testCluster(t)
	ctx := t.Context()
	ns := newTenant(t, cl)
	a := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server", ConnectionName: "conn"})
	gw := gatewayServer(ns, "server", "keys", 51840, 0)
	create(t, cl.Client, gw)
	a.gateway = gw

	a.writeStatus(ctx, netv1beta1.Connecting, 0)
	conn := mustConnection(t, a, "conn")
	wantRef := netv1beta1.GroupVersion.String() + " GatewayServer " + ns + "/server " + string(gw.UID)
	if ref := conn.Spec.GatewayRef; ref.APIVersion+" "+ref.Kind+" "+ref.Namespace+"/"+ref.Name+" "+string(ref.UID) != wantRef ||
		conn.Spec.Type != netv1beta1.ConnectionTypeServer {
		t.Errorf("Connection spec %+v, want type Server and gateway %s", conn.Spec, wantRef)
	}
	if conn.Labels[consts.RemoteClusterIDLabel] != "client-cluster" || !metav1.IsControlledBy(conn, gw) {
		t.Errorf("Connection labels %v, owners %v: want the gateway's cluster label and the gateway as controller", conn.Labels, conn.OwnerReferences)
	}
	if conn.Status.Value != netv1beta1.Connecting || conn.Status.Latency.Value != "" || a.status != netv1beta1.Connecting {
		t.Errorf("status %+v (agent's %q), want Connecting without latency", conn.Status, a.status)
	}

	rv := conn.ResourceVersion
	a.writeStatus(ctx, netv1beta1.Connecting, 0)
	if got := mustConnection(t, a, "conn").ResourceVersion; got != rv {
		t.Errorf("the same status was written again (resource version %s -> %s)", rv, got)
	}

	a.writeStatus(ctx, netv1beta1.Connected, 1234567*time.Nanosecond)
	conn = mustConnection(t, a, "conn")
	if conn.Status.Value != netv1beta1.Connected || conn.Status.Latency.Value != "1.235ms" || conn.Status.Latency.Timestamp.IsZero() {
		t.Errorf("status %+v, want Connected with latency 1.235ms and a timestamp", conn.Status)
	}
	rv = conn.ResourceVersion
	a.writeStatus(ctx, netv1beta1.Connected, 2*time.Millisecond)
	if conn := mustConnection(t, a, "conn"); conn.ResourceVersion != rv || conn.Status.Latency.Value != "1.235ms" {
		t.Errorf("a fresh latency was rewritten: %+v", conn.Status)
	}
	a.statusWritten = time.Now().Add(-latencyRefresh)
	a.writeStatus(ctx, netv1beta1.Connected, 2*time.Millisecond)
	if conn := mustConnection(t, a, "conn"); conn.Status.Latency.Value != "2ms" {
		t.Errorf("a latency older than %s was not rewritten: %+v", latencyRefresh, conn.Status)
	}

	a.writeStatus(ctx, netv1beta1.ConnectionError, 0)
	if conn := mustConnection(t, a, "conn"); conn.Status.Value != netv1beta1.ConnectionError || a.status != netv1beta1.ConnectionError {
		t.Errorf("status %+v (agent's %q), want Error", conn.Status, a.status)
	}
	if n := len(mustConnection(t, a, "conn").OwnerReferences); n != 1 {
		t.Errorf("%d owner references after several writes, want 1", n)
	}
}

// TestWriteStatusBeforeGatewayRead: a Connection written before the gateway is read points at
// the gateway by name; once the gateway is known, the next write labels it and makes the
// gateway its owner.
func TestWriteStatusBeforeGatewayRead(t *testing.T) {
	cl := testCluster(t)
	ctx := t.Context()
	ns := newTenant(t, cl)
	a := newTestAgent(t, cl, Options{Mode: ModeClient, Namespace: ns, GatewayName: "client"})
	a.writeStatus(ctx, netv1beta1.Connecting, 0)
	conn := mustConnection(t, a, "client")
	if ref := conn.Spec.GatewayRef; ref.Kind != "GatewayClient" || ref.Name != "client" || ref.Namespace != ns || ref.UID != "" ||
		conn.Spec.Type != netv1beta1.ConnectionTypeClient {
		t.Errorf("Connection spec %+v, want type Client and GatewayClient %s/client without UID", conn.Spec, ns)
	}
	if len(conn.Labels) != 0 || len(conn.OwnerReferences) != 0 {
		t.Errorf("Connection labelled %v, owned by %v, before the gateway was read", conn.Labels, conn.OwnerReferences)
	}

	gw := gatewayClient(ns, "client", "keys", "192.0.2.1", 51840, 0)
	create(t, cl.Client, gw)
	a.gateway = gw
	a.writeStatus(ctx, netv1beta1.ConnectionError, 0)
	conn = mustConnection(t, a, "client")
	if conn.Labels[consts.RemoteClusterIDLabel] != "server-cluster" || !metav1.IsControlledBy(conn, gw) || conn.Status.Value != netv1beta1.ConnectionError {
		t.Errorf("Connection labels %v, owners %v, status %q: want the gateway's label, the gateway as owner, Error",
			conn.Labels, conn.OwnerReferences, conn.Status.Value)
	}
}

// TestWriteStatusFailureIsRetried: a status that cannot be written is not remembered as
// written, so that the next call writes it.
func TestWriteStatusFailureIsRetried(t *testing.T) {
	cl := testCluster(t)
	ctx := t.Context()
	ns := fmt.Sprintf("absent-%d", time.Now().UnixNano())
	a := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server"})
	a.writeStatus(ctx, netv1beta1.Connecting, 0) // the namespace does not exist
	if a.status != "" {
		t.Fatalf("a failed write left the agent's status at %q", a.status)
	}
	create(t, cl.Client, namespace(ns))
	a.writeStatus(ctx, netv1beta1.Connecting, 0)
	if conn := mustConnection(t, a, "server"); conn.Status.Value != netv1beta1.Connecting || a.status != netv1beta1.Connecting {
		t.Errorf("after the namespace appeared: status %q (agent's %q), want Connecting", conn.Status.Value, a.status)
	}
}

// TestPutStatusForbidden: a writer that may not read Connections gets the error, with the
// Connection named.
func TestPutStatusForbidden(t *testing.T) {
	cl := testCluster(t)
	kubeconfig, err := cl.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ns := newTenant(t, cl)
	a, err := New(cfg, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server"}, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	err = a.putStatus(t.Context(), netv1beta1.Connecting, 0)
	if err == nil || !strings.Contains(err.Error(), "getting Connection "+ns+"/server") || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("putStatus as a user without rights: %v, want a forbidden error naming the Connection", err)
	}
	a.writeStatus(t.Context(), netv1beta1.Connecting, 0)
	if a.status != "" {
		t.Errorf("a forbidden write left the agent's status at %q", a.status)
	}
}

// TestShutdownLeavesConnected: stopping a Connected gateway marks its Connection Connecting;
// stopping one that is not connected writes nothing.
func TestShutdownLeavesConnected(t *testing.T) {
	cl := testCluster(t)
	ctx := t.Context()
	ns := newTenant(t, cl)
	a := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server"})
	a.writeStatus(ctx, netv1beta1.Connected, time.Millisecond)
	if err := a.shutdown(); err != nil {
		t.Fatalf("shutdown of an agent that made nothing on the host: %v", err)
	}
	conn := mustConnection(t, a, "server")
	if conn.Status.Value != netv1beta1.Connecting {
		t.Errorf("after shutdown of a Connected gateway, status %q, want Connecting", conn.Status.Value)
	}

	a.writeStatus(ctx, netv1beta1.ConnectionError, 0)
	rv := mustConnection(t, a, "server").ResourceVersion
	if err := a.shutdown(); err != nil {
		t.Fatal(err)
	}
	if conn := mustConnection(t, a, "server"); conn.ResourceVersion != rv || conn.Status.Value != netv1beta1.ConnectionError {
		t.Errorf("shutdown of a gateway in Error wrote its Connection: status %q", conn.Status.Value)
	}
}
