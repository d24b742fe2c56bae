package fabric

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
)

var (
	pfx  = netip.MustParsePrefix
	addr = netip.MustParseAddr
)

func TestLinkSpecGeneve(t *testing.T) {
	tun := Tunnel{Name: "liqo.abcdefghij", ID: 4242, Remote: addr("192.168.1.7"), Address: addr("10.80.0.2"), MTU: 1450}
	l, ok := LinkSpec(EncapGeneve, tun, DefaultPort).(*netlink.Geneve)
	if !ok {
		t.Fatalf("LinkSpec(geneve) is a %T, want *netlink.Geneve", l)
	}
	if l.Type() != "geneve" || l.Name != tun.Name || l.ID != 4242 || !l.Remote.Equal(tun.Remote.AsSlice()) ||
		l.Dport != 6091 || l.MTU != 1450 || l.Alias != LinkAlias || l.TxQLen != 1000 {
		t.Errorf("geneve link = %+v; want name %s, id 4242, remote 192.168.1.7, port 6091, MTU 1450, alias %s", l, tun.Name, LinkAlias)
	}
	if l.FlowBased {
		t.Error("the link must not be flow-based (external): it has one remote")
	}
	if !sameLink(l, EncapGeneve, tun, DefaultPort) || sameLink(l, EncapVXLAN, tun, DefaultPort) {
		t.Error("sameLink does not recognise the Geneve link it specified, or takes it for a VXLAN one")
	}
	tun.ID++
	if sameLink(l, EncapGeneve, tun, DefaultPort) {
		t.Error("sameLink ignores a changed ID")
	}
}

func TestLinkSpecVXLAN(t *testing.T) {
	tun := Tunnel{Name: "liqo.x", ID: 7, Remote: addr("192.168.1.8"), Address: addr("10.80.0.3"), MTU: 1450}
	l, ok := LinkSpec(EncapVXLAN, tun, 6091).(*netlink.Vxlan)
	if !ok {
		t.Fatalf("LinkSpec(vxlan) is a %T", l)
	}
	if l.VxlanId != 7 || !l.Group.Equal(tun.Remote.AsSlice()) || l.Port != 6091 || l.Learning || l.Alias != LinkAlias {
		t.Errorf("vxlan link = %+v; want VNI 7, remote 192.168.1.8, port 6091, no learning", l)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	d := Desired{
		Tunnels: []Tunnel{{Name: "liqo.waytoolongname", ID: maxVNI + 1, Remote: addr("192.168.1.1"), Address: addr("10.80.0.1")}},
		Tables:  []Table{{Name: "t", Rules: []Rule{{Routes: []Route{{Dst: pfx("10.0.0.0/8")}}}}}},
		Firewalls: []Firewall{{Name: "f", SNAT: []SNAT{{Dst: pfx("10.0.0.0/8"), Src: pfx("10.1.0.0/16"), To: pfx("10.2.0.0/24")}},
			CtMarks: []CtMark{{Src: pfx("10.70.0.0/32"), Iif: "x"}}}},
	}
	err := d.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad Desired")
	}
	for _, want := range []string{"tunnels[0].name", "tunnels[0].id: 16777216 is out of range", "tables[0].rules[0].routes[0]: a route needs gw, dev",
		"firewalls[0].snat[0].to", "firewalls[0].ctMarks[0]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestTableIDAvoidsKernelTables(t *testing.T) {
	seen := map[int]string{}
	for _, name := range []string{"a", "b", "fabric-node-gw", "node-1", "node-2", "node-1-service-nodeport-routing"} {
		id := TableID(name)
		if id < 256 || id > 0x7fffffff {
			t.Errorf("TableID(%q) = %d: out of 256..2^31-1", name, id)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("TableID(%q) = TableID(%q)", name, other)
		}
		seen[id] = name
		if TableID(name) != id {
			t.Errorf("TableID(%q) is not stable", name)
		}
	}
}

func TestNodeDesired(t *testing.T) {
	n := Node{
		Address: addr("10.80.0.3"),
		Fabrics: []NodeFabric{{Name: "gw-b", Interface: "liqo.aaaa", ID: 9, GatewayAddress: addr("192.168.241.3"),
			GatewayIP: addr("10.80.0.1"), RemoteCIDRs: []netip.Prefix{pfx("10.71.0.0/16"), pfx("10.70.0.0/16")}}},
		Peerings: []Peering{{Name: "b", LocalPodCIDRs: []netip.Prefix{pfx("10.244.0.0/16")}, LocalExternalCIDR: pfx("10.70.0.0/16"),
			RemotePodCIDRs: []netip.Prefix{pfx("10.71.0.0/16")}, RemoteExternalCIDR: pfx("10.72.0.0/16")}},
	}
	d := NodeDesired(n)
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	want := `{"tunnels":[{"name":"liqo.aaaa","id":9,"remote":"192.168.241.3","address":"10.80.0.3"}],` +
		`"tables":[{"name":"gw-b-node-gw","rules":[` +
		`{"dst":"10.80.0.1/32","routes":[{"dst":"10.80.0.1/32","dev":"liqo.aaaa"}]},` +
		`{"dst":"10.70.0.0/16","routes":[{"dst":"10.70.0.0/16","gw":"10.80.0.1","dev":"liqo.aaaa"}]},` +
		`{"dst":"10.71.0.0/16","routes":[{"dst":"10.71.0.0/16","gw":"10.80.0.1","dev":"liqo.aaaa"}]}]}],` +
		`"firewalls":[{"name":"b-masquerade-bypass","snat":[` +
		`{"dst":"10.71.0.0/16","src":"10.244.0.0/16","to":"10.244.0.0/16"},` +
		`{"dst":"10.71.0.0/16","notSrc":["10.244.0.0/16"],"to":"10.70.0.0/32"},` +
		`{"dst":"10.72.0.0/16","src":"10.244.0.0/16","to":"10.244.0.0/16"},` +
		`{"dst":"10.72.0.0/16","notSrc":["10.244.0.0/16"],"to":"10.70.0.0/32"}]}]}`
	got, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("NodeDesired =\n%s\nwant\n%s", got, want)
	}
}

func gatewayFor(cidrs bool) Gateway {
	g := Gateway{Address: addr("10.80.0.1"), TunnelInterface: "tun0", LocalExternalCIDR: pfx("10.70.0.0/16"), Nodes: []GatewayNode{
		{Name: "n1", Interface: "liqo.n1", ID: 1, NodeAddress: addr("192.168.241.1"), NodeIP: addr("10.80.0.2"),
			PodIPs: []netip.Addr{addr("10.244.1.10"), addr("10.244.1.11")}, Mark: 1},
		{Name: "n2", Interface: "liqo.n2", ID: 2, NodeAddress: addr("192.168.241.2"), NodeIP: addr("10.80.0.3"),
			PodIPs: []netip.Addr{addr("10.244.2.10")}, PodCIDRs: []netip.Prefix{pfx("10.244.2.0/24")}, Mark: 2},
	}}
	if cidrs {
		g.Nodes[0].PodCIDRs = []netip.Prefix{pfx("10.244.1.0/24")}
	}
	return g
}

func TestGatewayDesiredPodRoutes(t *testing.T) {
	// n1 has no pod CIDR: one /32 per pod everywhere, as upstream.
	d := GatewayDesired(gatewayFor(false))
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(d.Tunnels) != 2 || d.Tunnels[1].Remote != addr("192.168.241.2") || d.Tunnels[1].Address != addr("10.80.0.1") {
		t.Errorf("tunnels = %+v", d.Tunnels)
	}
	back := d.Tables[0].Rules[1]
	if back.Iif != "tun0" || len(back.Routes) != 2 || back.Routes[0].Dst != pfx("10.244.1.10/32") || back.Routes[0].Gw != addr("10.80.0.2") {
		t.Errorf("n1's return rule = %+v; want iif tun0, a /32 per pod via 10.80.0.2", back)
	}
	if r := d.Tables[2].Rules[1].Routes; len(r) != 1 || r[0].Dst != pfx("10.244.2.10/32") {
		t.Errorf("n2's return routes = %+v; want its pod's /32 (not every node has a pod CIDR)", r)
	}
	// Every node has one: per-node pod CIDR routes.
	d = GatewayDesired(gatewayFor(true))
	if r := d.Tables[0].Rules[1].Routes; len(r) != 1 || r[0].Dst != pfx("10.244.1.0/24") || r[0].Dev != "liqo.n1" {
		t.Errorf("n1's return routes = %+v; want 10.244.1.0/24 via liqo.n1", r)
	}
}

func TestGatewayDesiredNodePort(t *testing.T) {
	d := GatewayDesired(gatewayFor(false))
	if len(d.Firewalls) != 1 || d.Firewalls[0].Name != ServiceNodePortTable {
		t.Fatalf("firewalls = %+v", d.Firewalls)
	}
	f := d.Firewalls[0]
	if len(f.CtMarks) != 2 || f.CtMarks[1] != (CtMark{Src: pfx("10.70.0.0/32"), Iif: "liqo.n2", Mark: 2}) {
		t.Errorf("ct marks = %+v", f.CtMarks)
	}
	if len(f.MarkRestores) != 1 || f.MarkRestores[0] != (MarkRestore{Dst: pfx("10.70.0.0/32"), Iif: "tun0"}) {
		t.Errorf("mark restores = %+v", f.MarkRestores)
	}
	mark := d.Tables[3] // n2's
	if mark.Name != "n2-service-nodeport-routing" || mark.Rules[0].FwMark != 2 || mark.Rules[0].Iif != "tun0" || mark.Rules[0].Routes[0].Gw != addr("10.80.0.3") {
		t.Errorf("n2's NodePort table = %+v", mark)
	}
	order, _ := f.chainRules()
	if strings.Join(order, ",") != ChainCtMark+","+ChainMarkRestore {
		t.Errorf("chains = %v", order)
	}
}

func TestSNATPrefixKeepsTheSource(t *testing.T) {
	e := SNAT{Dst: pfx("10.71.0.0/16"), Src: pfx("10.244.0.0/16"), To: pfx("10.244.0.0/16")}.exprs()
	nat, ok := e[len(e)-1].(*expr.NAT)
	if !ok || !nat.Prefix || nat.Type != expr.NATTypeSourceNAT || nat.RegAddrMax != 2 {
		t.Fatalf("last expression = %#v; want a prefix SNAT", e[len(e)-1])
	}
	if last := e[len(e)-2].(*expr.Immediate).Data; netip.AddrFrom4([4]byte(last)) != addr("10.244.255.255") {
		t.Errorf("range end = %v; want 10.244.255.255", last)
	}
	single := SNAT{Dst: pfx("10.71.0.0/16"), NotSrc: []netip.Prefix{pfx("10.244.0.0/16")}, To: pfx("10.70.0.0/32")}.exprs()
	if nat := single[len(single)-1].(*expr.NAT); nat.Prefix || nat.RegAddrMax != 1 {
		t.Errorf("single-address SNAT = %#v", nat)
	}
	if cmp := single[5].(*expr.Cmp); cmp.Op != expr.CmpOpNeq {
		t.Errorf("notSrc compares with %v; want neq", cmp.Op)
	}
	if m := single[4].(*expr.Bitwise).Mask; string(m) != "\xff\xff\x00\x00" {
		t.Errorf("/16 mask = %x", m)
	}
}

// TestGatewayDesiredKeepsRemoteSources: a gateway with the peer's CIDRs keeps the source of what
// comes from them (a prefix SNAT onto itself, with no destination match), so that a CNI that
// masquerades sources outside the cluster (flannel, towards another node's pods) does not.
func TestGatewayDesiredKeepsRemoteSources(t *testing.T) {
	g := gatewayFor(true)
	g.RemoteCIDRs = []netip.Prefix{pfx("10.71.0.0/16"), pfx("10.64.0.0/16")}
	d := GatewayDesired(g)
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(d.Firewalls, func(f Firewall) bool { return f.Name == GatewayMasqueradeBypassTable })
	if i < 0 {
		t.Fatalf("firewalls = %+v; want %s", d.Firewalls, GatewayMasqueradeBypassTable)
	}
	want := []SNAT{{Src: pfx("10.64.0.0/16"), To: pfx("10.64.0.0/16")}, {Src: pfx("10.71.0.0/16"), To: pfx("10.71.0.0/16")}}
	if got := d.Firewalls[i].SNAT; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bypass = %+v; want %+v", got, want)
	}
	e := want[0].exprs()
	if p, ok := e[0].(*expr.Payload); !ok || p.Offset != srcOff {
		t.Errorf("first match = %#v; want the source only", e[0])
	}
	if d := GatewayDesired(gatewayFor(true)); slices.ContainsFunc(d.Firewalls, func(f Firewall) bool { return f.Name == GatewayMasqueradeBypassTable }) {
		t.Error("a gateway without remote CIDRs got a bypass table")
	}
}

// TestMergeTwoGateways: two gateways in one namespace, the second with links and a table prefix
// of its own, merge into one valid Desired: every link and table, one "service-nodeport-routing"
// table with both gateways' marks and restores, one bypass with both peers' CIDRs. Without the
// prefix the tables' names clash and Validate says so.
func TestMergeTwoGateways(t *testing.T) {
	a := gatewayFor(true)
	a.RemoteCIDRs = []netip.Prefix{pfx("10.71.0.0/16")}
	b := gatewayFor(true)
	b.Address, b.TunnelInterface, b.RemoteCIDRs = addr("10.80.0.9"), "tun1", []netip.Prefix{pfx("10.91.0.0/16")}
	for i := range b.Nodes {
		b.Nodes[i].Interface = fmt.Sprintf("liqo-t%06x", 40+i)
	}
	if err := Merge(GatewayDesired(a), GatewayDesired(b)).Validate(); err == nil || !strings.Contains(err.Error(), `"n1" is used by another table`) {
		t.Errorf("two gateways with the same table names: %v, want the clash named", err)
	}
	b.TablePrefix = "tenant2/peer2/"
	d := Merge(GatewayDesired(a), GatewayDesired(b))
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(d.Tunnels) != 4 || len(d.Tables) != 8 || len(d.Firewalls) != 2 {
		t.Fatalf("merged: %d tunnels, %d tables, %d nftables tables; want 4, 8, 2", len(d.Tunnels), len(d.Tables), len(d.Firewalls))
	}
	nodePort, bypass := d.Firewalls[0], d.Firewalls[1]
	if len(nodePort.CtMarks) != 4 || len(nodePort.MarkRestores) != 2 || nodePort.MarkRestores[1].Iif != "tun1" {
		t.Errorf("the NodePort table: %+v", nodePort)
	}
	if len(bypass.SNAT) != 2 || bypass.SNAT[1].Src != pfx("10.91.0.0/16") {
		t.Errorf("the bypass: %+v", bypass.SNAT)
	}
	if r := d.Tables[7]; r.Name != "tenant2/peer2/n2-service-nodeport-routing" || r.Rules[0].Iif != "tun1" {
		t.Errorf("the second gateway's NodePort table for n2: %+v; want its answers from tun1 only", r)
	}
}
