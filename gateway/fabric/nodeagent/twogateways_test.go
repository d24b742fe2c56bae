package nodeagent_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gwagent "github.com/peerkit/terraform-provider-liqo/gateway/agent"
	"github.com/peerkit/terraform-provider-liqo/gateway/fabric/fabrictest"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// The second peering of TestAgentTwoGatewaysOnOneNode: a GatewayClient on node-1 too, towards a
// second peer (its pods 10.84.0.0/16, external CIDR 10.85.0.0/16).
const (
	tenant2NS   = "liqo-tenant-provider2"
	clientName  = "client"
	remotePod2  = "10.84.0.5"
	remote2Pods = "10.84.0.0/16"
)

// secondPeer adds the second peer to b: a network namespace behind node-1's interface gwIf
// (the second gateway's tunnel) with its echo server; it returns the namespace.
func secondPeer(t *testing.T, b *bed, gwIf string) string {
	t.Helper()
	rm2 := testenv.NewNetns(t, "lqar")
	run(t, "", "link add "+gwIf+" netns "+b.n1+" type veth peer name eth0 netns "+rm2)
	run(t, b.n1, "addr add 169.254.102.1/30 dev "+gwIf, "link set "+gwIf+" up",
		"route add "+remote2Pods+" via 169.254.102.2", "route add 10.85.0.0/16 via 169.254.102.2")
	run(t, rm2, "addr add 169.254.102.2/30 dev eth0", "addr add "+remotePod2+"/16 dev eth0", "link set eth0 up",
		"route add default via 169.254.102.1")
	fabrictest.EchoSource(t, rm2, net.JoinHostPort(remotePod2, echoPort))
	return rm2
}

// createSecondPeering creates the GatewayClient on node-1 and the second peer's Configuration.
func createSecondPeering(t *testing.T, c client.Client) {
	t.Helper()
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant2NS}}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{consts.RemoteClusterIDLabel: "provider2"}
	gw := &netv1beta1.GatewayClient{ObjectMeta: metav1.ObjectMeta{Namespace: tenant2NS, Name: clientName, Labels: labels},
		Spec: netv1beta1.GatewayClientSpec{MTU: 1340, Endpoint: netv1beta1.EndpointStatus{Addresses: []string{"192.0.2.99"}, Port: 51841}}}
	createWithStatus(t, c, gw, func() {
		gw.Status.InternalEndpoint = &netv1beta1.InternalGatewayEndpoint{IP: ptr.To(netv1beta1.IP(node1Addr)), Node: ptr.To("node-1")}
	})
	conf := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: tenant2NS, Name: "provider2", Labels: labels},
		Spec: netv1beta1.ConfigurationSpec{Remote: netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{
			Pod: []netv1beta1.CIDR{remote2Pods}, External: []netv1beta1.CIDR{"10.85.0.0/16"}}}}}
	createWithStatus(t, c, conf, func() { conf.Status.Remote = &netv1beta1.ClusterConfig{CIDR: conf.Spec.Remote.CIDR} })
}

// TestAgentTwoGatewaysOnOneNode: node-1 hosts the gateways of two peerings (a server, then a
// client; ours run in the host network, so they share node-1's namespace). Both gateways' sides
// are applied: the pod and the host network of node-2 reach both peers (the pod with its own
// address, the host network as the external CIDR's first address, its answers routed back by
// each gateway's NodePort mark). The first gateway removed, the second keeps carrying traffic;
// the agents' exit leaves both nodes as they were.
func TestAgentTwoGatewaysOnOneNode(t *testing.T) {
	testenv.RequireNetAdmin(t)
	b := newBed(t, gwagent.InterfaceName(gwagent.ModeServer, tenantNS, gatewayName))
	secondPeer(t, b, gwagent.InterfaceName(gwagent.ModeClient, tenant2NS, clientName))
	cl, encap, base := bedCluster(t, b)
	c := cl.Client
	startManager(t, cl)
	stop1 := startAgent(t, cl, "node-1", b.n1, encap)
	stop2 := startAgent(t, cl, "node-2", b.n2, encap)
	server := createObjects(t, c)
	if got := eventuallySource(t, b.p2); got != "10.246.2.10" {
		t.Fatalf("the first peer sees the pod on node-2 as %s", got)
	}
	time.Sleep(time.Second) // the first gateway's links are older than the second's
	createSecondPeering(t, c)
	start := time.Now()
	seen := func(ns, peer, want string) {
		t.Helper()
		var got string
		testenv.EventuallyOK(t, fmt.Sprintf("%s's answer from %s", ns, peer), 30*time.Second, func() (err error) {
			got, err = fabrictest.SourceSeen(ns, net.JoinHostPort(peer, echoPort), 2*time.Second)
			return err
		})
		if got != want {
			t.Errorf("the peer %s sees %s as %s; want %s", peer, ns, got, want)
		}
	}
	seen(b.p2, remotePod2, "10.246.2.10")
	t.Logf("from the second peering's objects to traffic from the pod on node-2 through the second gateway: %v", time.Since(start))
	for _, peer := range []string{remotePod, remotePod2} {
		seen(b.p2, peer, "10.246.2.10")
		seen(b.n2, peer, "10.76.0.0") // the answers come back through each gateway's NodePort mark
	}
	if out := ipOut(t, b.n1, "-o", "link", "show"); !strings.Contains(out, "liqo-t") {
		t.Errorf("node-1 has no link of the second gateway's side (liqo-t<ID>):\n%s", out)
	}

	if err := c.Delete(t.Context(), server); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyOK(t, "the first gateway's side gone, the second's on upstream's names", 30*time.Second, func() error {
		if out := ipOut(t, b.n1, "-o", "link", "show"); strings.Contains(out, "liqo-t") {
			return fmt.Errorf("node-1 keeps a link named for a second gateway:\n%s", out)
		}
		if rules := ipOut(t, b.n1, "-4", "rule", "show"); strings.Contains(rules, gwagent.InterfaceName(gwagent.ModeServer, tenantNS, gatewayName)) {
			return fmt.Errorf("node-1 keeps the first gateway's rules:\n%s", rules)
		}
		return nil
	})
	seen(b.p2, remotePod2, "10.246.2.10")
	seen(b.n2, remotePod2, "10.76.0.0")
	stop1()
	stop2()
	for _, ns := range []string{b.n1, b.n2} {
		if now := state(t, ns); now != base[ns] {
			t.Errorf("after the agents' exit %s differs from before:\nbefore:\n%s\nafter:\n%s", ns, base[ns], now)
		}
	}
}
