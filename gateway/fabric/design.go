package fabric

import (
	"net/netip"
	"slices"
)

// DefaultInternalCIDR is upstream's default internal CIDR: the tunnel links' addresses.
var DefaultInternalCIDR = netip.MustParsePrefix("10.80.0.0/16")

// NodeFabric is one gateway as a node sees it (upstream: an InternalFabric and this node's
// GeneveTunnel for it).
type NodeFabric struct {
	// Name is the InternalFabric's name; the routing table is Name + "-node-gw".
	Name string `json:"name"`
	// Interface is the tunnel link's name (spec.interface.node.name).
	Interface string `json:"interface"`
	// ID is the tunnel's ID (GeneveTunnel spec.id).
	ID uint32 `json:"id"`
	// GatewayAddress is the gateway's address on the node network (spec.gatewayIP).
	GatewayAddress netip.Addr `json:"gatewayAddress"`
	// GatewayIP is the gateway's internal address (spec.interface.gateway.ip).
	GatewayIP netip.Addr `json:"gatewayIP"`
	// RemoteCIDRs are the peer's networks the gateway leads to (spec.remoteCIDRs).
	RemoteCIDRs []netip.Prefix `json:"remoteCIDRs"`
	// MTU is the link's MTU (spec.mtu; 0: from the path).
	MTU int `json:"mtu,omitempty"`
	// RulePriority is the rules' priority (the manager's --fabric-route-rule-priority; 0: the
	// kernel's choice).
	RulePriority int `json:"rulePriority,omitempty"`
}

// Peering is one peering's networks as the nodes' source NAT needs them (upstream: a
// Configuration's spec.local and status.remote).
type Peering struct {
	// Name is the Configuration's name; the nftables table is Name + "-masquerade-bypass".
	Name string `json:"name"`
	// LocalPodCIDRs are the local cluster's pod CIDRs.
	LocalPodCIDRs []netip.Prefix `json:"localPodCIDRs"`
	// LocalExternalCIDR is the local cluster's external CIDR: its first address is the source
	// of what does not come from a local pod (host network, NodePort).
	LocalExternalCIDR netip.Prefix `json:"localExternalCIDR"`
	// RemotePodCIDRs are the peer's pod CIDRs as the local cluster sees them (remapped).
	RemotePodCIDRs []netip.Prefix `json:"remotePodCIDRs"`
	// RemoteExternalCIDR is the peer's external CIDR as the local cluster sees it.
	RemoteExternalCIDR netip.Prefix `json:"remoteExternalCIDR"`
}

// Node is what a node's agent applies (upstream: the InternalNode of the node, the
// InternalFabrics and Configurations of the cluster).
type Node struct {
	// Address is the node's address in the internal CIDR (InternalNode spec.interface.node.ip),
	// set on every tunnel link of the node.
	Address netip.Addr `json:"address"`
	// Fabrics are the gateways.
	Fabrics []NodeFabric `json:"fabrics"`
	// Peerings are the peerings whose traffic the node's source NAT handles.
	Peerings []Peering `json:"peerings"`
}

// UnknownSourceIP is the address upstream gives what does not come from a local pod (host
// network, NodePort): the first address of the local external CIDR.
func UnknownSourceIP(externalCIDR netip.Prefix) netip.Addr { return externalCIDR.Masked().Addr() }

// NodeDesired is what a node holds, as upstream has it:
//
//   - per gateway, a tunnel link towards the gateway with the node's internal address, and a
//     routing table "<fabric>-node-gw": a rule to the gateway's internal address with its
//     link-scope route on the link, and a rule per remote CIDR with a route through the
//     gateway's internal address;
//   - per peering, an nftables table "<configuration>-masquerade-bypass" whose chain
//     "pre-postrouting" (postrouting, priority srcnat-1) keeps the source of what a local pod
//     sends to the peer's pod and external CIDRs (a prefix SNAT onto itself, which takes the
//     connection's source NAT before a CNI's masquerading), and maps every other source (host
//     network, NodePort) to the first address of the local external CIDR.
func NodeDesired(n Node) Desired {
	var d Desired
	for _, f := range n.Fabrics {
		d.Tunnels = append(d.Tunnels, Tunnel{Name: f.Interface, ID: f.ID, Remote: f.GatewayAddress, Address: n.Address, MTU: f.MTU})
		gw := netip.PrefixFrom(f.GatewayIP, 32)
		rules := []Rule{{Dst: gw, Priority: f.RulePriority, Routes: []Route{{Dst: gw, Dev: f.Interface}}}}
		for _, c := range sortedPrefixes(f.RemoteCIDRs) {
			rules = append(rules, Rule{Dst: c, Priority: f.RulePriority, Routes: []Route{{Dst: c, Gw: f.GatewayIP, Dev: f.Interface}}})
		}
		d.Tables = append(d.Tables, Table{Name: f.Name + "-node-gw", Rules: rules})
	}
	for _, p := range n.Peerings {
		d.Firewalls = append(d.Firewalls, Firewall{Name: p.Name + "-masquerade-bypass", SNAT: peeringSNAT(p)})
	}
	return d
}

// peeringSNAT are the source NAT rules of a peering, in upstream's order: per pair of local and
// remote pod CIDR the bypass, per remote pod CIDR the unknown source, then the same towards the
// remote external CIDR.
func peeringSNAT(p Peering) []SNAT {
	unknown := netip.PrefixFrom(UnknownSourceIP(p.LocalExternalCIDR), 32)
	var out []SNAT
	for _, l := range p.LocalPodCIDRs {
		for _, r := range p.RemotePodCIDRs {
			out = append(out, SNAT{Dst: r, Src: l, To: l})
		}
	}
	for _, r := range p.RemotePodCIDRs {
		out = append(out, SNAT{Dst: r, NotSrc: p.LocalPodCIDRs, To: unknown})
	}
	if p.RemoteExternalCIDR.IsValid() {
		for _, l := range p.LocalPodCIDRs {
			out = append(out, SNAT{Dst: p.RemoteExternalCIDR, Src: l, To: l})
		}
		out = append(out, SNAT{Dst: p.RemoteExternalCIDR, NotSrc: p.LocalPodCIDRs, To: unknown})
	}
	return out
}

// GatewayNode is one node as a gateway sees it (upstream: an InternalNode, its GeneveTunnel
// for this gateway, and the pods on it).
type GatewayNode struct {
	// Name is the node's name: the routing table of its pods.
	Name string `json:"name"`
	// Interface is the tunnel link's name (spec.interface.gateway.name).
	Interface string `json:"interface"`
	// ID is the tunnel's ID.
	ID uint32 `json:"id"`
	// NodeAddress is the node's address on the node network (status.nodeIP, local or remote).
	NodeAddress netip.Addr `json:"nodeAddress"`
	// NodeIP is the node's internal address (spec.interface.node.ip).
	NodeIP netip.Addr `json:"nodeIP"`
	// PodIPs are the addresses of the node's pods (not host-network ones).
	PodIPs []netip.Addr `json:"podIPs,omitempty"`
	// PodCIDRs are the node's pod CIDRs (spec.podCIDRs), when the CNI allocates per node.
	PodCIDRs []netip.Prefix `json:"podCIDRs,omitempty"`
	// Mark is the node's mark for the answers to its host-network and NodePort traffic (the
	// manager assigns one per node, from 1); 0: none.
	Mark uint32 `json:"mark,omitempty"`
}

// Gateway is what a gateway applies towards the nodes of its cluster.
type Gateway struct {
	// Address is the gateway's internal address (InternalFabric spec.interface.gateway.ip),
	// set on every tunnel link of the gateway.
	Address netip.Addr `json:"address"`
	// TunnelInterface is the interface to the peer (upstream: liqo-tunnel), where the answers
	// for the nodes come in.
	TunnelInterface string `json:"tunnelInterface"`
	// LocalExternalCIDR is the local external CIDR, whose first address the nodes give their
	// host-network and NodePort traffic.
	LocalExternalCIDR netip.Prefix `json:"localExternalCIDR,omitzero"`
	// MTU is the links' MTU (0: from the path).
	MTU int `json:"mtu,omitempty"`
	// Nodes are the cluster's nodes.
	Nodes []GatewayNode `json:"nodes"`
	// TablePrefix prefixes the names of its routing tables: "" for upstream's names (a gateway
	// alone in its network namespace); several gateways in one namespace (ours in the host
	// network of one node) each need their own.
	TablePrefix string `json:"tablePrefix,omitempty"`
	// RemoteCIDRs are the peer's networks as this cluster sees them (InternalFabric
	// spec.remoteCIDRs). A gateway in its node's network namespace (ours: host network) keeps
	// the source of what comes from them: the node's CNI would otherwise masquerade it on its
	// way to another node's pods (flannel does, for any source outside the cluster's network).
	RemoteCIDRs []netip.Prefix `json:"remoteCIDRs,omitempty"`
}

// GatewayMasqueradeBypassTable is the nftables table of a gateway that keeps the source of what
// comes from the peer's networks (Gateway.RemoteCIDRs); upstream's gateway runs in the pod
// network and needs none.
const GatewayMasqueradeBypassTable = "gateway-masquerade-bypass"

// ServiceNodePortTable is upstream's name for the gateway's nftables table (and the suffix of
// its routing tables) that route the answers to host-network and NodePort traffic back to
// the node it came from.
const ServiceNodePortTable = "service-nodeport-routing"

// GatewayDesired is what a gateway holds, as upstream has it:
//
//   - per node, a tunnel link towards the node with the gateway's internal address, and a
//     routing table named after the node: a rule to the node's internal address with its
//     link-scope route on the link, and a rule on TunnelInterface with the routes back to the
//     node's pods through the node's internal address: one /32 per pod (upstream), or the
//     node's pod CIDRs when every node has some (fewer routes, no change per pod);
//   - for host-network and NodePort traffic (source: the first address of the local external
//     CIDR), the nftables table "service-nodeport-routing": the connection takes the mark of
//     the node it came in from (chain "mark-to-conntrack"), its answers from TunnelInterface
//     take the connection's mark before routing (chain "conntrack-mark-to-meta-mark"), and a
//     table "<node>-service-nodeport-routing" per node routes that mark, coming in from
//     TunnelInterface (upstream matches the mark alone: its gateway is alone in its namespace),
//     back to the node.
//
// Its tables' names take TablePrefix; several gateways in one namespace are one Desired
// through Merge.
func GatewayDesired(g Gateway) Desired {
	var d Desired
	perCIDR := len(g.Nodes) > 0
	for _, n := range g.Nodes {
		perCIDR = perCIDR && len(n.PodCIDRs) > 0
	}
	unknown := netip.PrefixFrom(UnknownSourceIP(g.LocalExternalCIDR), 32)
	nodePort := Firewall{Name: ServiceNodePortTable}
	for _, n := range g.Nodes {
		d.Tunnels = append(d.Tunnels, Tunnel{Name: n.Interface, ID: n.ID, Remote: n.NodeAddress, Address: g.Address, MTU: g.MTU})
		node := netip.PrefixFrom(n.NodeIP, 32)
		back := Rule{Iif: g.TunnelInterface}
		if perCIDR {
			for _, c := range sortedPrefixes(n.PodCIDRs) {
				back.Routes = append(back.Routes, Route{Dst: c, Gw: n.NodeIP, Dev: n.Interface})
			}
		} else {
			for _, ip := range n.PodIPs {
				back.Routes = append(back.Routes, Route{Dst: netip.PrefixFrom(ip, 32), Gw: n.NodeIP, Dev: n.Interface})
			}
		}
		d.Tables = append(d.Tables, Table{Name: g.TablePrefix + n.Name, Rules: []Rule{{Dst: node, Routes: []Route{{Dst: node, Dev: n.Interface}}}, back}})
		if n.Mark == 0 || !g.LocalExternalCIDR.IsValid() {
			continue
		}
		nodePort.CtMarks = append(nodePort.CtMarks, CtMark{Src: unknown, Iif: n.Interface, Mark: n.Mark})
		d.Tables = append(d.Tables, Table{Name: g.TablePrefix + n.Name + "-" + ServiceNodePortTable, Rules: []Rule{{
			FwMark: n.Mark, Dst: unknown, Iif: g.TunnelInterface, Routes: []Route{{Dst: unknown, Gw: n.NodeIP, Dev: n.Interface}},
		}}})
	}
	if len(nodePort.CtMarks) > 0 {
		nodePort.MarkRestores = []MarkRestore{{Dst: unknown, Iif: g.TunnelInterface}}
		d.Firewalls = append(d.Firewalls, nodePort)
	}
	if len(g.RemoteCIDRs) > 0 {
		bypass := Firewall{Name: GatewayMasqueradeBypassTable}
		for _, r := range sortedPrefixes(g.RemoteCIDRs) {
			bypass.SNAT = append(bypass.SNAT, SNAT{Src: r, To: r})
		}
		d.Firewalls = append(d.Firewalls, bypass)
	}
	return d
}

// sortedPrefixes is a sorted copy of ps (stable tables whatever the objects' order).
func sortedPrefixes(ps []netip.Prefix) []netip.Prefix {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return out
}
