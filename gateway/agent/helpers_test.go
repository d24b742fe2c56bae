package agent

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// The package's tests that read or write objects share one cluster, started by the first of
// them (tests of pure functions start none) and stopped by TestMain.
var (
	clusterOnce sync.Once
	clusterEnv  *testenv.Env
	clusterErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if clusterEnv != nil {
		if err := clusterEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test cluster:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testCluster returns the package's cluster, starting it on first use.
func testCluster(t *testing.T) *testenv.Cluster {
	t.Helper()
	testenv.RequireLong(t, "starts a real API server")
	clusterOnce.Do(func() {
		clusterEnv, clusterErr = testenv.Start(context.Background(), testenv.ClusterOptions{Name: "gateway"})
	})
	if clusterErr != nil {
		t.Fatalf("starting the test cluster: %v", clusterErr)
	}
	return clusterEnv.Cluster("gateway")
}

// newTenant creates a tenant namespace of its own for the test (its name derives from the
// test's, plus random hex digits, so that the derived interface names differ too).
func newTenant(t *testing.T, cl *testenv.Cluster) string {
	t.Helper()
	base := strings.NewReplacer("/", "-", "_", "-").Replace(strings.ToLower(strings.TrimPrefix(t.Name(), "Test")))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-" + base[:min(len(base), 20)] + "-"}}
	if err := cl.Client.Create(t.Context(), ns); err != nil {
		t.Fatalf("creating a tenant namespace: %v", err)
	}
	return ns.Name
}

// namespace is a namespace named name.
func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// newTestAgent makes an agent for cl with New; it reads the objects straight from the API
// server instead of the cache (which only Run starts), so that a test sees its writes at once.
func newTestAgent(t *testing.T, cl *testenv.Cluster, opts Options) *Agent {
	t.Helper()
	a, err := New(cl.Config, opts, testr.New(t))
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	a.reader, a.ips = cl.Client, cl.Client
	return a
}

// logLines keeps what a logger wrote, for tests that wait for a message.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

// capturingLogger returns a logger that writes to the test's log and keeps its lines.
func capturingLogger(t *testing.T) (logr.Logger, *logLines) {
	t.Helper()
	l := &logLines{}
	return funcr.New(func(prefix, args string) {
		t.Log(prefix, args)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{}), l
}

// has tells whether a line contains s.
func (l *logLines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// create creates objs, failing the test on the first error.
func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// newKey makes a WireGuard private key.
func newKey(t *testing.T) wgtypes.Key {
	t.Helper()
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// keySecret is a gateway's key Secret holding the raw private key k.
func keySecret(ns, name string, k wgtypes.Key) *corev1.Secret {
	pub := k.PublicKey()
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{consts.PrivateKeySecretKey: k[:], "publicKey": pub[:]}}
}

// publicKey is the peer's PublicKey object holding the raw public key k.
func publicKey(ns, name string, k wgtypes.Key) *netv1beta1.PublicKey {
	return &netv1beta1.PublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: netv1beta1.PublicKeySpec{PublicKey: k[:]}}
}

// configuration is a Configuration declaring the remote pod CIDRs pods.
func configuration(ns, name string, pods ...string) *netv1beta1.Configuration {
	c := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, p := range pods {
		c.Spec.Remote.CIDR.Pod = append(c.Spec.Remote.CIDR.Pod, netv1beta1.CIDR(p))
	}
	return c
}

// gatewayServer is a GatewayServer listening on port, with key Secret secret and MTU mtu.
func gatewayServer(ns, name, secret string, port int32, mtu int) *netv1beta1.GatewayServer {
	return &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{consts.RemoteClusterIDLabel: "client-cluster"}},
		Spec: netv1beta1.GatewayServerSpec{MTU: mtu, SecretRef: corev1.LocalObjectReference{Name: secret},
			Endpoint: netv1beta1.Endpoint{Port: port, ServiceType: corev1.ServiceTypeNodePort}}}
}

// gatewayClient is a GatewayClient connecting over UDP to addr:port, with key Secret secret and
// MTU mtu.
func gatewayClient(ns, name, secret, addr string, port int32, mtu int) *netv1beta1.GatewayClient {
	udp := corev1.ProtocolUDP
	return &netv1beta1.GatewayClient{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{consts.RemoteClusterIDLabel: "server-cluster"}},
		Spec: netv1beta1.GatewayClientSpec{MTU: mtu, SecretRef: corev1.LocalObjectReference{Name: secret},
			Endpoint: netv1beta1.EndpointStatus{Addresses: []string{addr}, Port: port, Protocol: &udp}}}
}

// getConnection reads the Connection name in ns.
func getConnection(ctx context.Context, c client.Client, ns, name string) (*netv1beta1.Connection, error) {
	conn := &netv1beta1.Connection{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, conn); err != nil {
		return nil, fmt.Errorf("getting Connection %s/%s: %w", ns, name, err)
	}
	return conn, nil
}

// freeUDPPort returns a UDP port free on the host right now (wireguard-go binds its socket on
// the host side, whichever namespace the device is in).
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// cidr parses s, failing the test when it is not a CIDR.
func cidr(t *testing.T, s string) net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return *n
}
