package fabric

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/peerkit/terraform-provider-liqo/gateway/fabric/fabrictest"
	"github.com/peerkit/terraform-provider-liqo/gateway/netcfg"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// bed is a cluster of two nodes and a gateway, each a network namespace on a bridge (the node
// network 192.168.241.0/24), a pod on each node, and a "remote" namespace behind the gateway's
// interface tun0 standing for the peer (its pods 10.71.0.0/16, its external CIDR
// 10.72.0.0/16). The local pod CIDR is 10.244.0.0/16 (10.244.<node>.0/24 per node), the
// local external CIDR 10.70.0.0/16.
type bed struct {
	ul, n1, n2, gw, rm, p1, p2 string
}

// Addresses of the bed.
const (
	remotePod   = "10.71.0.5"
	echoPort    = "7000"
	pingPort    = "7001"
	bedPodCIDR  = "10.244.0.0/16"
	bedGatewayI = "10.80.0.1"
)

// ipBatch runs iproute2 commands in a network namespace (fabrictest.IPBatch).
var ipBatch = fabrictest.IPBatch

// newBed makes the bed; the namespaces go when the test ends.
func newBed(tb testing.TB) *bed {
	tb.Helper()
	testenv.RequireNetAdmin(tb)
	b := &bed{ul: testenv.NewNetns(tb, "lqfu"), n1: testenv.NewNetns(tb, "lqfn"), n2: testenv.NewNetns(tb, "lqfn"),
		gw: testenv.NewNetns(tb, "lqfg"), rm: testenv.NewNetns(tb, "lqfr"), p1: testenv.NewNetns(tb, "lqfp"), p2: testenv.NewNetns(tb, "lqfp")}
	ipBatch(tb, "",
		"link add eth0 netns "+b.n1+" type veth peer name v1 netns "+b.ul,
		"link add eth0 netns "+b.n2+" type veth peer name v2 netns "+b.ul,
		"link add eth0 netns "+b.gw+" type veth peer name v3 netns "+b.ul,
		"link add tun0 netns "+b.gw+" type veth peer name eth0 netns "+b.rm,
		"link add cni0 netns "+b.n1+" type veth peer name eth0 netns "+b.p1,
		"link add cni0 netns "+b.n2+" type veth peer name eth0 netns "+b.p2)
	ipBatch(tb, b.ul, "link add br0 type bridge", "link set br0 up",
		"link set v1 master br0 up", "link set v2 master br0 up", "link set v3 master br0 up")
	for i, n := range []string{b.n1, b.n2} {
		ipBatch(tb, n, fmt.Sprintf("addr add 192.168.241.%d/24 dev eth0", i+1), "link set eth0 up",
			fmt.Sprintf("addr add 10.244.%d.1/24 dev cni0", i+1), "link set cni0 up")
		ipBatch(tb, []string{b.p1, b.p2}[i], fmt.Sprintf("addr add 10.244.%d.10/24 dev eth0", i+1), "link set eth0 up",
			fmt.Sprintf("route add default via 10.244.%d.1", i+1))
	}
	ipBatch(tb, b.gw, "addr add 192.168.241.3/24 dev eth0", "link set eth0 up", "addr add 169.254.100.1/30 dev tun0",
		"link set tun0 up", "route add 10.71.0.0/16 via 169.254.100.2", "route add 10.72.0.0/16 via 169.254.100.2")
	ipBatch(tb, b.rm, "addr add 169.254.100.2/30 dev eth0", "addr add "+remotePod+"/16 dev eth0", "link set eth0 up",
		"route add default via 169.254.100.1")
	for _, ns := range []string{b.n1, b.n2, b.gw} {
		in(tb, ns, netcfg.EnableForwarding)
	}
	in(tb, b.gw, DisableRPFilter)
	for _, ns := range []string{b.n1, b.n2, b.gw} {
		waitCarrier(tb, ns, "eth0")
	}
	in(tb, b.n2, cniMasquerade) // as flannel does: the pods' traffic leaving the pod CIDR is masqueraded
	return b
}

// waitCarrier waits up to 5 s for link to have its carrier (a bridge port takes a moment), so
// that snapshots taken later compare.
func waitCarrier(tb testing.TB, ns, link string) {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if out, err := exec.Command("ip", "-n", ns, "link", "show", link).CombinedOutput(); err == nil && strings.Contains(string(out), "state UP") {
			return
		}
	}
	tb.Fatalf("link %s in %s has no carrier after 5 s", link, ns)
}

// in runs fn in a network namespace (fabrictest.In).
var in = fabrictest.In

// cniMasquerade writes a CNI's masquerading (nat, postrouting, priority srcnat): what leaves
// the pod CIDR from it takes the node's address.
func cniMasquerade() error {
	conn, err := nftables.New()
	if err != nil {
		return err
	}
	t := conn.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "cni-masq"})
	c := conn.AddChain(&nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	pods := netip.MustParsePrefix(bedPodCIDR)
	conn.AddRule(&nftables.Rule{Table: t, Chain: c, Exprs: join(matchIP(srcOff, pods, expr.CmpOpEq), matchIP(dstOff, pods, expr.CmpOpNeq), []expr.Any{&expr.Masq{}})})
	return conn.Flush()
}

// desired are the bed's Desired states: n1's, n2's and the gateway's.
func (b *bed) desired() (n1, n2, gw Desired) {
	fabric := func(id uint32) NodeFabric {
		return NodeFabric{Name: "gw-remote", Interface: "liqo.gwremote", ID: id, GatewayAddress: addr("192.168.241.3"),
			GatewayIP: addr(bedGatewayI), RemoteCIDRs: []netip.Prefix{pfx("10.71.0.0/16"), pfx("10.72.0.0/16")}}
	}
	peering := Peering{Name: "remote", LocalPodCIDRs: []netip.Prefix{pfx(bedPodCIDR)}, LocalExternalCIDR: pfx("10.70.0.0/16"),
		RemotePodCIDRs: []netip.Prefix{pfx("10.71.0.0/16")}, RemoteExternalCIDR: pfx("10.72.0.0/16")}
	n1 = NodeDesired(Node{Address: addr("10.80.0.2"), Fabrics: []NodeFabric{fabric(11)}, Peerings: []Peering{peering}})
	n2 = NodeDesired(Node{Address: addr("10.80.0.3"), Fabrics: []NodeFabric{fabric(12)}, Peerings: []Peering{peering}})
	gw = GatewayDesired(Gateway{Address: addr(bedGatewayI), TunnelInterface: "tun0", LocalExternalCIDR: pfx("10.70.0.0/16"), Nodes: []GatewayNode{
		{Name: "n1", Interface: "liqo.n1", ID: 11, NodeAddress: addr("192.168.241.1"), NodeIP: addr("10.80.0.2"),
			PodIPs: []netip.Addr{addr("10.244.1.10")}, Mark: 1},
		{Name: "n2", Interface: "liqo.n2", ID: 12, NodeAddress: addr("192.168.241.2"), NodeIP: addr("10.80.0.3"),
			PodIPs: []netip.Addr{addr("10.244.2.10")}, Mark: 2},
	}})
	return n1, n2, gw
}

// apply applies want in ns and returns the report.
func apply(tb testing.TB, dp *Dataplane, ns string, want Desired) Report {
	tb.Helper()
	var rep Report
	in(tb, ns, func() (err error) {
		rep, err = dp.Apply(context.Background(), want)
		return err
	})
	return rep
}

// snapshot is what the kernel of ns holds that the fabric could touch: links, IPv4 rules and
// routes of every table, nftables tables and chains.
func snapshot(tb testing.TB, ns string) string {
	tb.Helper()
	var out strings.Builder
	for _, args := range [][]string{{"-d", "link", "show"}, {"-4", "rule", "show"}, {"-4", "route", "show", "table", "all"}} {
		out.WriteString(fabrictest.IPShow(tb, ns, args...))
	}
	in(tb, ns, func() error {
		conn, err := nftables.New()
		if err != nil {
			return err
		}
		chains, err := conn.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
		for _, c := range chains {
			rules, _ := conn.GetRules(c.Table, c)
			fmt.Fprintf(&out, "nft %s %s %d rules\n", c.Table.Name, c.Name, len(rules))
		}
		return err
	})
	return out.String()
}

// echoServer answers each connection to remotePod:echoPort with the source address it sees, and
// echoes every byte sent to remotePod:pingPort.
func echoServer(tb testing.TB, ns string) {
	tb.Helper()
	fabrictest.EchoSource(tb, ns, net.JoinHostPort(remotePod, echoPort))
	fabrictest.Serve(tb, ns, net.JoinHostPort(remotePod, pingPort), func(c net.Conn) {
		buf := make([]byte, 1)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	})
}

// sourceSeen connects from ns to the remote echo server and returns the source it saw.
func sourceSeen(ns string) (string, error) {
	return fabrictest.SourceSeen(ns, net.JoinHostPort(remotePod, echoPort), 3*time.Second)
}

// rttP50 is the median of n one-byte TCP round trips from ns to the remote echo.
func rttP50(tb testing.TB, ns string, n int) time.Duration {
	tb.Helper()
	c, err := netns.DialContext(context.Background(), netns.Named(ns), "tcp", net.JoinHostPort(remotePod, pingPort))
	if err != nil {
		tb.Fatalf("from %s: %v", ns, err)
	}
	defer func() { _ = c.Close() }()
	rtts := make([]time.Duration, 0, n)
	buf := []byte{1}
	for range n {
		start := time.Now()
		if _, err := c.Write(buf); err != nil {
			tb.Fatal(err)
		}
		if _, err := c.Read(buf); err != nil {
			tb.Fatal(err)
		}
		rtts = append(rtts, time.Since(start))
	}
	slices.Sort(rtts)
	return rtts[n/2]
}

// eventuallySource retries sourceSeen from ns for up to 5 s (the first packets wait for ARP
// over the tunnel) and returns the source the remote saw.
func eventuallySource(tb testing.TB, ns string) string {
	tb.Helper()
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var got string
		if got, err = sourceSeen(ns); err == nil {
			return got
		}
	}
	tb.Fatalf("from %s, the remote pod %s does not answer: %v", ns, remotePod, err)
	return ""
}

// TestFabricOnTwoNodes: pods and host-network sources on both nodes, the gateway's and the
// other, reach the peer through the tunnels and the gateway, with their own source (pods) or the
// first address of the external CIDR (host network) despite the CNI's masquerading; a second
// Apply changes nothing; a node dropped from the gateway loses its link, routes and rules; and
// RemoveAll leaves every namespace as it was.
func TestFabricOnTwoNodes(t *testing.T) {
	b := newBed(t)
	echoServer(t, b.rm)
	log := testr.NewWithOptions(t, testr.Options{Verbosity: 1})
	var encap Encap
	in(t, b.n1, func() (err error) { encap, err = DetectEncap(log); return err })
	t.Logf("encapsulation this kernel takes: %s", encap)
	dp := &Dataplane{Encap: encap, Log: log}
	nodes := []string{b.n1, b.n2, b.gw}
	base := map[string]string{}
	for _, ns := range nodes {
		base[ns] = snapshot(t, ns)
	}
	if got, err := sourceSeen(b.p2); err == nil {
		t.Fatalf("the pod on n2 reaches the peer before the fabric (seen as %s): the bed is wrong", got)
	}
	n1, n2, gw := b.desired()
	want := map[string]Desired{b.n1: n1, b.n2: n2, b.gw: gw}
	start := time.Now()
	for _, ns := range nodes {
		if rep := apply(t, dp, ns, want[ns]); !rep.Changed() {
			t.Fatalf("first Apply in %s changed nothing", ns)
		}
	}
	t.Logf("first Apply on 2 nodes and the gateway: %v", time.Since(start))
	if out, _ := exec.Command("ip", "-n", b.n2, "-d", "link", "show", "liqo.gwremote").CombinedOutput(); !strings.Contains(string(out), string(encap)+" id 12") {
		t.Errorf("n2's tunnel link is not %s id 12:\n%s", encap, out)
	}
	for ns, src := range map[string]string{b.p1: "10.244.1.10", b.p2: "10.244.2.10", b.n1: "10.70.0.0", b.n2: "10.70.0.0"} {
		if got := eventuallySource(t, ns); got != src {
			t.Errorf("from %s the peer sees %s; want %s", ns, got, src)
		}
	}
	t.Logf("TCP round trip p50 (500): pod on n2 through its tunnel and the gateway %v; from the gateway itself %v",
		rttP50(t, b.p2, 500), rttP50(t, b.gw, 500))

	var again time.Duration
	for _, ns := range nodes {
		applied := snapshot(t, ns)
		start = time.Now()
		rep := apply(t, dp, ns, want[ns])
		again += time.Since(start)
		if rep.Changed() {
			t.Errorf("second Apply in %s changed %+v", ns, rep)
		}
		if now := snapshot(t, ns); now != applied {
			t.Errorf("second Apply in %s changed the kernel's state:\nbefore:\n%s\nafter:\n%s", ns, applied, now)
		}
	}
	t.Logf("second (idempotent) Apply on 2 nodes and the gateway: %v", again)

	testNodeDropped(t, b, dp, gw)

	for _, ns := range nodes {
		in(t, ns, func() error { _, err := dp.RemoveAll(context.Background()); return err })
		if now := snapshot(t, ns); now != base[ns] {
			t.Errorf("after RemoveAll, %s differs from before the fabric:\nbefore:\n%s\nafter:\n%s", ns, base[ns], now)
		}
	}
	if got, err := sourceSeen(b.p2); err == nil {
		t.Errorf("the pod on n2 still reaches the peer after RemoveAll (seen as %s)", got)
	}
}

// testNodeDropped applies the gateway's Desired without n1: n1's link, tables and rules go, n2
// keeps its traffic; then it applies the whole Desired again.
func testNodeDropped(t *testing.T, b *bed, dp *Dataplane, gw Desired) {
	t.Helper()
	without := Desired{Firewalls: gw.Firewalls}
	for _, tun := range gw.Tunnels {
		if tun.Name != "liqo.n1" {
			without.Tunnels = append(without.Tunnels, tun)
		}
	}
	for _, tab := range gw.Tables {
		if !strings.HasPrefix(tab.Name, "n1") {
			without.Tables = append(without.Tables, tab)
		}
	}
	rep := apply(t, dp, b.gw, without)
	if rep.LinksRemoved != 1 || rep.RulesRemoved != 3 || rep.LinksCreated+rep.RulesAdded+rep.RoutesAdded != 0 {
		t.Errorf("dropping n1 from the gateway: %+v; want its link and its 3 rules removed, nothing added", rep)
	}
	if got := eventuallySource(t, b.p2); got != "10.244.2.10" {
		t.Errorf("after n1 left, the peer sees the pod on n2 as %s", got)
	}
	if rep := apply(t, dp, b.gw, gw); rep.LinksCreated != 1 || rep.RulesAdded != 3 {
		t.Errorf("n1 back on the gateway: %+v; want its link and 3 rules added", rep)
	}
	if got := eventuallySource(t, b.p1); got != "10.244.1.10" {
		t.Errorf("after n1 came back, the peer sees the pod on n1 as %s", got)
	}
}
