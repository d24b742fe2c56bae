package nodeagent_test

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/gateway/fabric/fabrictest"
	"github.com/peerkit/terraform-provider-liqo/gateway/netcfg"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// Addresses of the bed: node-1 (which hosts the gateway, host network) and node-2 on the node
// network 192.168.243.0/24, a pod on each (pod CIDR 10.246.0.0/16, 10.246.<n>.0/24 per node, routed
// between the nodes as a CNI's host-gw would), the peer behind node-1's gateway interface (its
// pods 10.74.0.0/16, external CIDR 10.75.0.0/16); the local external CIDR is 10.76.0.0/16.
const (
	remotePod   = "10.74.0.5"
	echoPort    = "7100"
	podCIDR     = "10.246.0.0/16"
	extCIDR     = "10.76.0.0/16"
	node1Addr   = "192.168.243.1"
	node2Addr   = "192.168.243.2"
	tenantNS    = "liqo-tenant-provider"
	gatewayName = "server"
)

// bed is the network namespaces of the test: the node network's bridge, the two nodes, a pod on
// each, and the peer.
type bed struct{ ul, n1, n2, p1, p2, rm string }

// run runs iproute2 commands in a network namespace (fabrictest.IPBatch); inNS runs a function
// in one (fabrictest.In).
var (
	run  = fabrictest.IPBatch
	inNS = fabrictest.In
)

// newBed makes the bed; gwIf is the name of the gateway's interface to the peer on node-1.
// node-1's reverse-path filtering is strict, as on many hosts.
func newBed(tb testing.TB, gwIf string) *bed {
	tb.Helper()
	testenv.RequireNetAdmin(tb)
	b := &bed{ul: testenv.NewNetns(tb, "lqau"), n1: testenv.NewNetns(tb, "lqan"), n2: testenv.NewNetns(tb, "lqan"),
		p1: testenv.NewNetns(tb, "lqap"), p2: testenv.NewNetns(tb, "lqap"), rm: testenv.NewNetns(tb, "lqar")}
	run(tb, "",
		"link add eth0 netns "+b.n1+" type veth peer name v1 netns "+b.ul,
		"link add eth0 netns "+b.n2+" type veth peer name v2 netns "+b.ul,
		"link add "+gwIf+" netns "+b.n1+" type veth peer name eth0 netns "+b.rm,
		"link add cni0 netns "+b.n1+" type veth peer name eth0 netns "+b.p1,
		"link add cni0 netns "+b.n2+" type veth peer name eth0 netns "+b.p2)
	run(tb, b.ul, "link add br0 type bridge", "link set br0 up", "link set v1 master br0 up", "link set v2 master br0 up")
	for i, n := range []string{b.n1, b.n2} {
		other := 2 - i
		run(tb, n, fmt.Sprintf("addr add 192.168.243.%d/24 dev eth0", i+1), "link set eth0 up",
			fmt.Sprintf("addr add 10.246.%d.1/24 dev cni0", i+1), "link set cni0 up",
			fmt.Sprintf("route add 10.246.%d.0/24 via 192.168.243.%d", other, other))
		run(tb, []string{b.p1, b.p2}[i], fmt.Sprintf("addr add 10.246.%d.10/24 dev eth0", i+1), "link set eth0 up",
			fmt.Sprintf("route add default via 10.246.%d.1", i+1))
		inNS(tb, n, netcfg.EnableForwarding)
	}
	// node-1 has a default route, as a real node does: the loose reverse-path check of its
	// gateway links wants a route back to the host-network source of node-2 (the external
	// CIDR's first address), which only the NodePort mark routes otherwise.
	run(tb, b.n1, "route add default via 192.168.243.254", "addr add 169.254.101.1/30 dev "+gwIf, "link set "+gwIf+" up",
		"route add 10.74.0.0/16 via 169.254.101.2", "route add 10.75.0.0/16 via 169.254.101.2")
	run(tb, b.rm, "addr add 169.254.101.2/30 dev eth0", "addr add "+remotePod+"/16 dev eth0", "link set eth0 up",
		"route add default via 169.254.101.1")
	if out, err := exec.Command("ip", "netns", "exec", b.n1, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=1").CombinedOutput(); err != nil {
		tb.Fatalf("strict rp_filter on node-1: %v\n%s", err, out)
	}
	echoServer(tb, b.rm)
	return b
}

// echoServer answers each connection to remotePod:echoPort in ns with the source it sees.
func echoServer(tb testing.TB, ns string) {
	tb.Helper()
	fabrictest.EchoSource(tb, ns, net.JoinHostPort(remotePod, echoPort))
}

// sourceSeen connects from ns to the peer's echo server and returns the source it saw.
func sourceSeen(ns string) (string, error) {
	return fabrictest.SourceSeen(ns, net.JoinHostPort(remotePod, echoPort), 2*time.Second)
}

// links are the names of ns's links whose name starts with "liqo.".
func links(tb testing.TB, ns string) []string {
	tb.Helper()
	out, err := exec.Command("ip", "-n", ns, "-o", "link", "show").CombinedOutput()
	if err != nil {
		tb.Fatalf("ip link in %s: %v\n%s", ns, err, out)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], "liqo.") {
			names = append(names, strings.TrimSuffix(strings.Split(f[1], "@")[0], ":"))
		}
	}
	return names
}

// state is ns's rules, routes of every table and nftables tables, for comparisons.
func state(tb testing.TB, ns string) string {
	tb.Helper()
	var out strings.Builder
	for _, args := range [][]string{{"-o", "link", "show"}, {"-4", "rule", "show"}, {"-4", "route", "show", "table", "all"}} {
		for _, line := range strings.Split(fabrictest.IPShow(tb, ns, args...), "\n") {
			out.WriteString(stripLinkState(line) + "\n")
		}
	}
	out.WriteString("nft: " + strings.Join(nftTables(tb, ns), ",") + "\n")
	return out.String()
}

// stripLinkState drops what changes by itself on a link line (its counters and operational state).
func stripLinkState(line string) string {
	if i := strings.Index(line, " state "); i >= 0 {
		return line[:i]
	}
	return line
}

// execIP runs ip in ns and returns its output.
func execIP(ns string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	return string(out), err
}
