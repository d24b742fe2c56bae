package nodeagent

import (
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gwagent "github.com/peerkit/terraform-provider-liqo/gateway/agent"
	"github.com/peerkit/terraform-provider-liqo/gateway/fabric"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// testView is a cluster of nodes n1 (which hosts the gateway, 192.0.2.1) and n2, with a
// peering's FirewallConfiguration as the controller manager forges it; n2 has no pod CIDR when
// n2CIDR is false, and one pod on it. n2's tunnel has ID 0, the first upstream's manager hands out.
func testView(t *testing.T, node string, n2CIDR bool) *view {
	t.Helper()
	f := netv1beta1.InternalFabric{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "peer",
		OwnerReferences: []metav1.OwnerReference{{Kind: "GatewayServer", Name: "server"}}},
		Spec: netv1beta1.InternalFabricSpec{MTU: 1340, GatewayIP: "192.0.2.1", RemoteCIDRs: []netv1beta1.CIDR{"10.71.0.0/16"},
			Interface: netv1beta1.InternalFabricSpecInterface{Node: netv1beta1.InternalFabricSpecInterfaceNode{Name: "liqo.fabric0001"},
				Gateway: netv1beta1.InternalFabricSpecInterfaceGateway{IP: "10.80.0.1"}}}}
	in := func(name, ip, gwIf, remote string) netv1beta1.InternalNode {
		n := netv1beta1.InternalNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
		forge.MutateInternalNode(&n, gwIf, ip)
		n.Status.NodeIP.Remote = ptr.To(netv1beta1.IP(remote))
		return n
	}
	tun := func(node string, id uint32) netv1beta1.GeneveTunnel {
		return netv1beta1.GeneveTunnel{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "peer-" + node, Labels: map[string]string{
			consts.InternalFabricNameLabel: "peer", consts.InternalNodeNameLabel: node}}, Spec: netv1beta1.GeneveTunnelSpec{ID: id}}
	}
	cfg := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "peer"}}
	fw := netv1beta1.FirewallConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: forge.MasqueradeBypassName(cfg)}}
	forge.MutateMasqueradeBypass(&fw, cfg, forge.MasqueradeBypassOptions{LocalPodCIDRs: []string{"10.244.0.0/16"}, UnknownSourceIP: "10.70.0.0",
		RemotePodCIDRs: []string{"10.71.0.0/16"}, RemoteExternalCIDR: "10.72.0.0/16"})
	v := &view{node: node, fabrics: []netv1beta1.InternalFabric{f},
		nodes:     []netv1beta1.InternalNode{in("n1", "10.80.0.2", "liqo.node000001", "192.0.2.1"), in("n2", "10.80.0.3", "liqo.node000002", "192.0.2.2")},
		tunnels:   []netv1beta1.GeneveTunnel{tun("n1", 11), tun("n2", 0)},
		firewalls: []netv1beta1.FirewallConfiguration{fw},
		k8sNodes: map[string]*corev1.Node{"n1": {Spec: corev1.NodeSpec{PodCIDRs: []string{"10.244.1.0/24"}}},
			"n2": {Spec: corev1.NodeSpec{}}},
		podIPs: map[string][]netip.Addr{"n2": {netip.MustParseAddr("10.244.2.7")}}}
	if n2CIDR {
		v.k8sNodes["n2"].Spec.PodCIDRs = []string{"10.244.2.0/24"}
	}
	for i := range v.nodes {
		if v.nodes[i].Name == node {
			v.me = &v.nodes[i]
		}
	}
	return v
}

// peering is the peering of testView as gateway/fabric's own builder takes it.
var peering = fabric.Peering{Name: "peer", LocalPodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")},
	LocalExternalCIDR: netip.MustParsePrefix("10.70.0.0/16"), RemotePodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.71.0.0/16")},
	RemoteExternalCIDR: netip.MustParsePrefix("10.72.0.0/16")}

// TestDesiredNode: on n2 (the gateway elsewhere) the agent wants what fabric.NodeDesired builds
// from the objects: a tunnel with n2's GeneveTunnel ID to the gateway's address, the table to the
// remote CIDRs, and the FirewallConfiguration read back into the same SNAT rules.
func TestDesiredNode(t *testing.T) {
	v := testView(t, "n2", true)
	got := v.desired(testr.New(t), map[string]bool{"192.0.2.2": true})
	want := fabric.NodeDesired(fabric.Node{Address: netip.MustParseAddr("10.80.0.3"), Peerings: []fabric.Peering{peering},
		Fabrics: []fabric.NodeFabric{{Name: "peer", Interface: "liqo.fabric0001", ID: 0, GatewayAddress: netip.MustParseAddr("192.0.2.1"),
			GatewayIP: netip.MustParseAddr("10.80.0.1"), RemoteCIDRs: []netip.Prefix{netip.MustParsePrefix("10.71.0.0/16")}, MTU: 1340}}})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("n2's Desired\n got %+v\nwant %+v", got, want)
	}
	if len(v.gatewayLinks) != 0 {
		t.Errorf("n2 has the gateway's links %v", v.gatewayLinks)
	}
}

// TestDesiredGatewayNode: on n1, which hosts the gateway, no tunnel to itself but the gateway's
// side towards n2 (its status.nodeIP.remote, the (fabric, n2) tunnel's ID), back through the
// gateway's tunnel interface to n2's pod CIDR, or to its pod's /32 when a node has no pod CIDR.
func TestDesiredGatewayNode(t *testing.T) {
	for _, cidr := range []bool{true, false} {
		v := testView(t, "n1", cidr)
		got := v.desired(testr.New(t), map[string]bool{"192.0.2.1": true})
		gn := fabric.GatewayNode{Name: "n2", Interface: "liqo.node000002", ID: 0, NodeAddress: netip.MustParseAddr("192.0.2.2"),
			NodeIP: netip.MustParseAddr("10.80.0.3"), PodIPs: []netip.Addr{netip.MustParseAddr("10.244.2.7")}}
		if cidr {
			gn.PodCIDRs = []netip.Prefix{netip.MustParsePrefix("10.244.2.0/24")}
		}
		want := fabric.NodeDesired(fabric.Node{Address: netip.MustParseAddr("10.80.0.2"), Peerings: []fabric.Peering{peering}})
		gd := fabric.GatewayDesired(fabric.Gateway{Address: netip.MustParseAddr("10.80.0.1"), TunnelInterface: gwagent.InterfaceName(gwagent.ModeServer, "tenant", "server"),
			MTU: 1340, Nodes: []fabric.GatewayNode{gn}, RemoteCIDRs: []netip.Prefix{netip.MustParsePrefix("10.71.0.0/16")}})
		want.Tunnels, want.Tables = gd.Tunnels, gd.Tables
		want.Firewalls = append(want.Firewalls, gd.Firewalls...) // the gateway's: the peer's sources kept
		if !reflect.DeepEqual(got, want) {
			t.Errorf("n1's Desired (n2 with a pod CIDR: %v)\n got %+v\nwant %+v", cidr, got, want)
		}
		route := got.Tables[0].Rules[1].Routes[0].Dst.String()
		if wantRoute := map[bool]string{true: "10.244.2.0/24", false: "10.244.2.7/32"}[cidr]; route != wantRoute {
			t.Errorf("n1's route back to n2's pods: %s, want %s", route, wantRoute)
		}
		if !reflect.DeepEqual(v.gatewayLinks, []string{"liqo.node000002"}) {
			t.Errorf("the gateway's links %v", v.gatewayLinks)
		}
	}
}

// TestDesiredNodeGone: without its InternalNode (removed, or not made yet) a node wants no tunnel
// and no table, only the peerings' SNAT tables.
func TestDesiredNodeGone(t *testing.T) {
	v := testView(t, "n2", true)
	v.me = nil
	got := v.desired(testr.New(t), map[string]bool{"192.0.2.2": true})
	if len(got.Tunnels)+len(got.Tables) != 0 || len(got.Firewalls) != 1 {
		t.Errorf("without its InternalNode n2 wants %+v", got)
	}
}

// TestDesiredTwoGatewaysOnOneNode: n1 hosts the gateways of two peerings. Both sides are
// applied: the older gateway's links and tables keep upstream's names, the newer one's links are
// named after its tunnels' IDs and its tables after its InternalFabric, and the two gateways'
// nftables tables of the same name are one. Then the older one goes, and the newer one takes
// upstream's names.
func TestDesiredTwoGatewaysOnOneNode(t *testing.T) {
	v := testView(t, "n1", true)
	older := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	v.fabrics[0].CreationTimestamp = older
	second := *v.fabrics[0].DeepCopy()
	second.Namespace, second.Name, second.CreationTimestamp = "tenant2", "peer2", metav1.NewTime(older.Add(time.Hour))
	second.OwnerReferences = []metav1.OwnerReference{{Kind: "GatewayClient", Name: "client"}}
	second.Spec.GatewayIP, second.Spec.Interface.Gateway.IP = "192.0.2.1", "10.80.0.9"
	second.Spec.RemoteCIDRs = []netv1beta1.CIDR{"10.91.0.0/16"}
	// The newer one listed first: the order of the list does not decide.
	v.fabrics = []netv1beta1.InternalFabric{second, v.fabrics[0]}
	v.tunnels = append(v.tunnels, netv1beta1.GeneveTunnel{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant2", Name: "peer2-n2",
		Labels: map[string]string{consts.InternalFabricNameLabel: "peer2", consts.InternalNodeNameLabel: "n2"}}, Spec: netv1beta1.GeneveTunnelSpec{ID: 0x2a}})
	v.marks = map[string]uint32{"n2": 2}
	v.unknownIP = netip.MustParseAddr("10.70.0.0")

	got := v.desired(testr.New(t), map[string]bool{"192.0.2.1": true})
	if err := got.Validate(); err != nil {
		t.Fatalf("two gateways on n1: %v", err)
	}
	if !reflect.DeepEqual(v.gatewayLinks, []string{"liqo.node000002", "liqo-t00002a"}) {
		t.Errorf("the gateways' links %v, want the older one's upstream name, then the newer one's by tunnel ID", v.gatewayLinks)
	}
	tables := map[string]fabric.Table{}
	for _, tb := range got.Tables {
		tables[tb.Name] = tb
	}
	back := tables["tenant2/peer2/n2"].Rules[1]
	if back.Iif != gwagent.InterfaceName(gwagent.ModeClient, "tenant2", "client") || back.Routes[0].Dev != "liqo-t00002a" {
		t.Errorf("the newer gateway's way back to n2: %+v", back)
	}
	if r := tables["tenant2/peer2/n2-service-nodeport-routing"].Rules; len(r) != 1 || r[0].FwMark != 2 || r[0].Iif != back.Iif {
		t.Errorf("the newer gateway's NodePort table: %+v, want mark 2 from its own tunnel interface", r)
	}
	if _, ok := tables["n2"]; !ok {
		t.Errorf("the older gateway's table n2 is missing: %v", slices.Collect(maps.Keys(tables)))
	}
	for _, fw := range got.Firewalls {
		switch fw.Name {
		case fabric.ServiceNodePortTable:
			if len(fw.CtMarks) != 2 || len(fw.MarkRestores) != 2 {
				t.Errorf("the NodePort table: %+v, want a mark and a restore per gateway", fw)
			}
		case fabric.GatewayMasqueradeBypassTable:
			if len(fw.SNAT) != 2 {
				t.Errorf("the gateways' bypass: %+v, want both peers' CIDRs", fw.SNAT)
			}
		}
	}

	v.fabrics = v.fabrics[:1] // the older one gone
	v.desired(testr.New(t), map[string]bool{"192.0.2.1": true})
	if !reflect.DeepEqual(v.gatewayLinks, []string{"liqo.node000002"}) {
		t.Errorf("alone, the newer gateway's links %v, want upstream's name", v.gatewayLinks)
	}
}
