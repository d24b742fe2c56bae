package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/gateway/nat"
	"github.com/peerkit/terraform-provider-liqo/gateway/tunnel"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

func TestMain(m *testing.M) {
	if code, ran := runHelper(); ran {
		os.Exit(code)
	}
	code := m.Run()
	if err := testenv.RemoveBuilds(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// requireNetAdmin skips the test unless it runs as root with TUN and ip available.
func requireNetAdmin(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root: creates network namespaces, TUN devices and nftables rules")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		tb.Skip("needs /dev/net/tun")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skip("needs ip on PATH")
	}
}

// suffix returns 5 random hex characters, to make names unique per test.
func suffix(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)[:5]
}

// sh runs a command and fails the test when it fails.
func sh(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// inNS runs a command in network namespace ns.
func inNS(ns string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...)
}

// side is one cluster's half of the topology: a gateway host and a pod behind it.
type side struct {
	host, pod string // netns names
	podIP     string // the pod's address
	podCIDR   string // the cluster's pod CIDR
	underlay  string // the gateway host's underlay address
}

// topology is two gateway hosts linked by an underlay veth, each with a pod behind it.
type topology struct {
	a, b side
}

// topoOptions shape a topology.
type topoOptions struct {
	underlayMTU int // 0: 1500
	samePodCIDR bool
}

// newTopology creates the namespaces and links, removed when the test ends.
func newTopology(tb testing.TB, sfx string, o topoOptions) *topology {
	tb.Helper()
	t := &topology{
		a: side{host: "lqha" + sfx, pod: "lqpa" + sfx, podIP: "10.1.0.10", podCIDR: "10.1.0.0/16", underlay: "192.168.240.1"},
		b: side{host: "lqhb" + sfx, pod: "lqpb" + sfx, podIP: "10.2.0.10", podCIDR: "10.2.0.0/16", underlay: "192.168.240.2"},
	}
	if o.samePodCIDR {
		t.b.podIP, t.b.podCIDR = "10.1.0.20", "10.1.0.0/16"
	}
	for _, ns := range []string{t.a.host, t.a.pod, t.b.host, t.b.pod} {
		sh(tb, "ip", "netns", "add", ns)
		tb.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		sh(tb, "ip", "-n", ns, "link", "set", "lo", "up")
	}
	sh(tb, "ip", "link", "add", "ul"+sfx, "netns", t.a.host, "type", "veth", "peer", "name", "ul"+sfx, "netns", t.b.host)
	mtu := o.underlayMTU
	if mtu == 0 {
		mtu = 1500
	}
	for _, s := range []side{t.a, t.b} {
		sh(tb, "ip", "-n", s.host, "link", "set", "ul"+sfx, "name", "ul0")
		sh(tb, "ip", "-n", s.host, "link", "set", "ul0", "mtu", fmt.Sprint(mtu), "up")
		sh(tb, "ip", "-n", s.host, "addr", "add", s.underlay+"/24", "dev", "ul0")
		// The pod: a veth from the gateway host into the pod's namespace.
		gwIP := strings.Join(strings.Split(s.podIP, ".")[:3], ".") + ".1"
		sh(tb, "ip", "link", "add", "pd"+sfx, "netns", s.host, "type", "veth", "peer", "name", "pp"+sfx, "netns", s.pod)
		sh(tb, "ip", "-n", s.host, "link", "set", "pd"+sfx, "name", "pod0")
		sh(tb, "ip", "-n", s.host, "addr", "add", gwIP+"/24", "dev", "pod0")
		sh(tb, "ip", "-n", s.host, "link", "set", "pod0", "up")
		sh(tb, "ip", "-n", s.pod, "link", "set", "pp"+sfx, "name", "eth0")
		sh(tb, "ip", "-n", s.pod, "addr", "add", s.podIP+"/24", "dev", "eth0")
		sh(tb, "ip", "-n", s.pod, "link", "set", "eth0", "up")
		sh(tb, "ip", "-n", s.pod, "route", "add", "default", "via", gwIP)
	}
	return t
}

// keyPair is a gateway's WireGuard keys.
type keyPair struct{ private, public wgtypes.Key }

func newKeyPair(tb testing.TB) keyPair {
	tb.Helper()
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		tb.Fatal(err)
	}
	return keyPair{private: k, public: k.PublicKey()}
}

// peering is the objects of one peering in both clusters, and the gateways following them.
type peering struct {
	topo                 *topology
	sfx                  string
	server, client       *testenv.Cluster // a runs the server, b the client
	serverNS, clientNS   string
	serverKeys, clientKs keyPair
	serverIf, clientIf   string
	serverGw, clientGw   *gatewayProc
	// gatewayEnv is added to the gateways' environment (e.g. GOMAXPROCS).
	gatewayEnv []string
	// gatewayArgs are added to the gateways' flags (e.g. --liqo-namespace).
	gatewayArgs []string
}

const (
	serverName = "server"
	clientName = "client"
	keysName   = "gateway-keys"
	serverPort = 51840
)

// newPeering writes the peering's objects: cluster a is the server side, b the client side.
// serverMTU and clientMTU set the gateways' spec.mtu (0: from the underlay).
func newPeering(ctx context.Context, tb testing.TB, env *testenv.Env, topo *topology, sfx string) *peering {
	tb.Helper()
	p := &peering{
		topo: topo, sfx: sfx, server: env.Cluster("a"), client: env.Cluster("b"),
		serverNS: "liqo-tenant-b-" + sfx, clientNS: "liqo-tenant-a-" + sfx,
		serverKeys: newKeyPair(tb), clientKs: newKeyPair(tb),
		serverIf: "lqs" + sfx, clientIf: "lqc" + sfx,
	}
	udp := corev1.ProtocolUDP
	create := func(c client.Client, objs ...client.Object) {
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				tb.Fatalf("creating %T %s: %v", o, o.GetName(), err)
			}
		}
	}
	ns := func(name, remote string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"liqo.io/remote-cluster-id": remote, "liqo.io/tenant-namespace": "true"}}}
	}
	secret := func(ns string, k keyPair) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: keysName},
			Data: map[string][]byte{"privateKey": k.private[:], "publicKey": k.public[:]}}
	}
	pubKey := func(ns, remote string, k wgtypes.Key) *netv1beta1.PublicKey {
		return &netv1beta1.PublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gateway-" + remote,
			Labels: map[string]string{"liqo.io/remote-cluster-id": remote}}, Spec: netv1beta1.PublicKeySpec{PublicKey: k[:]}}
	}
	conf := func(ns, remote string, local, remoteSide side) *netv1beta1.Configuration {
		return &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: remote,
			Labels: map[string]string{"liqo.io/remote-cluster-id": remote}},
			Spec: netv1beta1.ConfigurationSpec{
				Local:  &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{netv1beta1.CIDR(local.podCIDR)}}},
				Remote: netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{netv1beta1.CIDR(remoteSide.podCIDR)}}},
			}}
	}
	create(p.server.Client,
		ns(p.serverNS, "b"),
		secret(p.serverNS, p.serverKeys),
		pubKey(p.serverNS, "b", p.clientKs.public),
		conf(p.serverNS, "b", topo.a, topo.b),
		&netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: p.serverNS, Name: serverName},
			Spec: netv1beta1.GatewayServerSpec{SecretRef: corev1.LocalObjectReference{Name: keysName},
				Endpoint: netv1beta1.Endpoint{Port: serverPort, ServiceType: corev1.ServiceTypeNodePort}}},
	)
	create(p.client.Client,
		ns(p.clientNS, "a"),
		secret(p.clientNS, p.clientKs),
		pubKey(p.clientNS, "a", p.serverKeys.public),
		conf(p.clientNS, "a", topo.b, topo.a),
		&netv1beta1.GatewayClient{ObjectMeta: metav1.ObjectMeta{Namespace: p.clientNS, Name: clientName},
			Spec: netv1beta1.GatewayClientSpec{SecretRef: corev1.LocalObjectReference{Name: keysName},
				Endpoint: netv1beta1.EndpointStatus{Addresses: []string{topo.a.underlay}, Port: serverPort, Protocol: &udp}}},
	)
	return p
}

// startServer and startClient run the gateways as processes in the gateway hosts.
func (p *peering) startServer(tb testing.TB) *gatewayProc {
	tb.Helper()
	p.serverGw = startGateway(tb, p.topo.a.host, "server", p.server.KubeconfigPath, p.serverNS, serverName, p.serverIf, p.gatewayEnv, p.gatewayArgs...)
	return p.serverGw
}

func (p *peering) startClient(tb testing.TB) *gatewayProc {
	tb.Helper()
	p.clientGw = startGateway(tb, p.topo.b.host, "client", p.client.KubeconfigPath, p.clientNS, clientName, p.clientIf, p.gatewayEnv, p.gatewayArgs...)
	return p.clientGw
}

// gatewayProc is a running liqo-gateway process.
type gatewayProc struct {
	cmd   *exec.Cmd
	ifc   string
	mu    sync.Mutex
	lines []string
	done  chan struct{}
	err   error
}

// startGateway runs liqo-gateway in netns ns, with env added to its environment and args to its
// flags; the test's end stops it (SIGTERM, then SIGKILL).
func startGateway(tb testing.TB, ns, mode, kubeconfig, namespace, gateway, ifc string, env []string, args ...string) *gatewayProc {
	tb.Helper()
	g := &gatewayProc{ifc: ifc, done: make(chan struct{})}
	gatewayBin := filepath.Join(testenv.BuildOnce(tb, "./cmd/liqo-gateway"), "liqo-gateway")
	g.cmd = inNS(ns, append([]string{gatewayBin, "--mode=" + mode, "--kubeconfig=" + kubeconfig, "--namespace=" + namespace,
		"--gateway=" + gateway, "--interface=" + ifc, fmt.Sprintf("--api-netns=/proc/%d/ns/net", os.Getpid())}, args...)...)
	if len(env) > 0 {
		g.cmd.Env = append(os.Environ(), env...)
	}
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	g.cmd.Stdout = os.Stdout
	if err := g.cmd.Start(); err != nil {
		tb.Fatalf("starting gateway: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			g.mu.Lock()
			g.lines = append(g.lines, sc.Text())
			g.mu.Unlock()
		}
		g.err = g.cmd.Wait()
		close(g.done)
	}()
	tb.Cleanup(func() {
		g.stop()
		if tb.Failed() {
			tb.Logf("--- %s gateway log (%s) ---\n%s", mode, ns, strings.Join(g.log(), "\n"))
		}
		_ = os.Remove(tunnel.SocketPath(ifc))
	})
	return g
}

// stop ends the process: SIGTERM (clean shutdown), SIGKILL after 5 s.
func (g *gatewayProc) stop() {
	select {
	case <-g.done:
		return
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(5 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
	}
}

// kill ends the process with SIGKILL: no clean-up.
func (g *gatewayProc) kill() {
	_ = g.cmd.Process.Kill()
	<-g.done
}

func (g *gatewayProc) log() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.lines...)
}

// logEntry finds the first JSON log line with message msg and returns it decoded.
func (g *gatewayProc) logEntry(msg string) map[string]any {
	for _, l := range g.log() {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			return m
		}
	}
	return nil
}

// waitConnection waits until the Connection name in ns reads want (and, for Connected, has a
// latency), and returns it.
func waitConnection(ctx context.Context, tb testing.TB, c *testenv.Cluster, ns, name string, want netv1beta1.ConnectionStatusValue, timeout time.Duration) *netv1beta1.Connection {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	conn := &netv1beta1.Connection{}
	for {
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, conn)
		if err == nil && conn.Status.Value == want && (want != netv1beta1.Connected || conn.Status.Latency.Value != "") {
			return conn
		}
		if time.Now().After(deadline) {
			tb.Fatalf("Connection %s/%s in cluster %s: want %s within %s, last seen %q (err %v)", ns, name, c.Name, want, timeout, conn.Status.Value, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mustPing fails the test unless dst answers from ns, retrying for a few seconds.
func mustPing(tb testing.TB, ns, dst string) string {
	tb.Helper()
	var out string
	var ok bool
	for range 10 {
		if out, ok = ping(ns, dst, 3); ok {
			return out
		}
		time.Sleep(300 * time.Millisecond)
	}
	tb.Fatalf("ping %s from %s failed:\n%s", dst, ns, out)
	return ""
}

// linkExists tells whether interface ifc exists in netns ns.
func linkExists(ns, ifc string) bool {
	return exec.Command("ip", "-n", ns, "link", "show", ifc).Run() == nil
}

// gatewayRules reads the nftables table of the gateway with tunnel interface ifc in netns ns;
// nat.ErrNoTable when it has none.
func gatewayRules(ns, ifc string) (nat.State, error) {
	var st nat.State
	err := netns.Do(netns.Named(ns), func() (err error) {
		st, err = nat.Rules{Interface: ifc}.Installed()
		return err
	})
	return st, err
}
