package forge

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1/firewall"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// The network fabric's objects (issue 32), with upstream Liqo v1.2's names and shapes.

// MutateInternalNode brings the InternalNode of a node to its allocated gateway-side interface
// name and internal address (status is the node agent's).
func MutateInternalNode(in *netv1beta1.InternalNode, gatewayInterface, ip string) {
	in.Spec.Interface.Gateway.Name = gatewayInterface
	in.Spec.Interface.Node.IP = netv1beta1.IP(ip)
}

// InternalFabricOptions is what an InternalFabric says of its gateway.
type InternalFabricOptions struct {
	// MTU is the gateway's tunnel MTU.
	MTU int
	// GatewayIP is the gateway pod's address (the nodes' tunnel remote end).
	GatewayIP string
	// NodeInterface is the name of every node's tunnel interface to the gateway.
	NodeInterface string
	// GatewayInternalIP is the gateway's allocated address on the internal network.
	GatewayInternalIP string
	// RemoteCIDRs are the peer's pod and external CIDRs as this cluster sees them.
	RemoteCIDRs []netv1beta1.CIDR
}

// InternalFabricName is the name of the InternalFabric of the gateway for the peer remoteID
// (upstream names it after the peer's cluster ID).
func InternalFabricName(remoteID string) string {
	return remoteID
}

// MutateInternalFabric brings the InternalFabric of the gateway for the peer remoteID to o.
func MutateInternalFabric(f *netv1beta1.InternalFabric, remoteID string, o InternalFabricOptions) {
	setLabels(f, map[string]string{consts.RemoteClusterIDLabel: remoteID})
	f.Spec.MTU = o.MTU
	f.Spec.GatewayIP = netv1beta1.IP(o.GatewayIP)
	f.Spec.Interface.Node.Name = o.NodeInterface
	f.Spec.Interface.Gateway.IP = netv1beta1.IP(o.GatewayInternalIP)
	f.Spec.RemoteCIDRs = slices.Clone(o.RemoteCIDRs)
}

// GeneveTunnelName is the name of the tunnel between fabric and node (in fabric's namespace).
func GeneveTunnelName(fabric, node string) string {
	return fabric + "-" + node
}

// MutateGeneveTunnel brings the tunnel between f and in to the ID id.
func MutateGeneveTunnel(t *netv1beta1.GeneveTunnel, f *netv1beta1.InternalFabric, in *netv1beta1.InternalNode, id uint32) {
	setLabels(t, map[string]string{consts.InternalFabricNameLabel: f.Name, consts.InternalNodeNameLabel: in.Name})
	t.Spec.ID = id
	t.Spec.InternalNodeRef = &corev1.ObjectReference{Name: in.Name}
	t.Spec.InternalFabricRef = &corev1.ObjectReference{Name: f.Name, Namespace: f.Namespace}
}

// FabricRouteConfigurationName is the name of the nodes' routes to the gateway of f.
func FabricRouteConfigurationName(f *netv1beta1.InternalFabric) string {
	return f.Name + "-node-gw"
}

// MutateFabricRouteConfiguration brings the routes every node's fabric agent applies towards
// the gateway of f: the gateway's internal address on the link of the node's tunnel interface,
// then each remote CIDR (sorted) via that address; priority 0 leaves the agent its own.
func MutateFabricRouteConfiguration(rc *netv1beta1.RouteConfiguration, f *netv1beta1.InternalFabric, priority int) {
	setLabels(rc, map[string]string{consts.RouteCategoryLabel: consts.RouteCategoryFabric})
	var prio *int
	if priority > 0 {
		prio = ptr.To(priority)
	}
	gw := f.Spec.Interface.Gateway.IP
	host := netv1beta1.CIDR(string(gw) + "/32")
	rules := []netv1beta1.Rule{{Dst: ptr.To(host), Priority: prio, Routes: []netv1beta1.Route{
		{Dst: ptr.To(host), Dev: ptr.To(f.Spec.Interface.Node.Name), Scope: ptr.To(netv1beta1.LinkScope)},
	}}}
	remote := slices.Clone(f.Spec.RemoteCIDRs)
	slices.Sort(remote)
	for _, c := range remote {
		rules = append(rules, netv1beta1.Rule{Dst: ptr.To(c), Priority: prio, Routes: []netv1beta1.Route{{Dst: ptr.To(c), Gw: ptr.To(gw)}}})
	}
	rc.Spec.Table = netv1beta1.Table{Name: rc.Name, Rules: rules}
}

// GatewayNodeRouteConfigurationName is the name of the gateways' routes to the node node.
func GatewayNodeRouteConfigurationName(node string) string {
	return node + "-gw-node"
}

// NodePod is a pod the gateways route back to its node: its name, namespace, UID and address.
type NodePod struct {
	// Name and Namespace identify the pod.
	Name, Namespace string
	// UID is the pod's UID.
	UID types.UID
	// IP is the pod's address.
	IP string
}

// MutateGatewayNodeRouteConfiguration brings the routes every gateway applies towards the node
// of in: the node's internal address on the link of the gateway's tunnel interface to it, then,
// for traffic coming in from the peer (input interface consts.GatewayTunnelInterface), one /32
// per pod of the node via the node's internal address, as upstream does.
func MutateGatewayNodeRouteConfiguration(rc *netv1beta1.RouteConfiguration, in *netv1beta1.InternalNode, pods []NodePod) {
	// One per node, with or without peerings: the manager's own, which uninstall removes.
	setLabels(rc, map[string]string{consts.RouteCategoryLabel: consts.RouteCategoryGateway,
		consts.RouteSubCategoryLabel: consts.RouteSubCategoryFabric, consts.ManagedByLabel: consts.ManagedByControllerManager})
	nodeIP := in.Spec.Interface.Node.IP
	host := netv1beta1.CIDR(string(nodeIP) + "/32")
	rules := []netv1beta1.Rule{{Dst: ptr.To(host), Routes: []netv1beta1.Route{
		{Dst: ptr.To(host), Dev: ptr.To(in.Spec.Interface.Gateway.Name), Scope: ptr.To(netv1beta1.LinkScope)},
	}}}
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b NodePod) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	if len(sorted) > 0 {
		back := netv1beta1.Rule{Iif: ptr.To(consts.GatewayTunnelInterface)}
		for _, p := range sorted {
			back.Routes = append(back.Routes, netv1beta1.Route{Dst: ptr.To(netv1beta1.CIDR(p.IP + "/32")), Gw: ptr.To(nodeIP),
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: p.Name, Namespace: p.Namespace, UID: p.UID}})
		}
		rules = append(rules, back)
	}
	rc.Spec.Table = netv1beta1.Table{Name: in.Name, Rules: rules}
}

// MasqueradeBypassName is the name of the fabric's SNAT rules for the peering of cfg.
func MasqueradeBypassName(cfg *netv1beta1.Configuration) string {
	return cfg.Name + "-masquerade-bypass"
}

// MasqueradeBypassOptions is what the fabric's SNAT rules of a peering depend on.
type MasqueradeBypassOptions struct {
	// LocalPodCIDRs are this cluster's pod CIDRs.
	LocalPodCIDRs []string
	// UnknownSourceIP is the first address of this cluster's external CIDR: the source of
	// host-network and NodePort traffic towards the peer.
	UnknownSourceIP string
	// RemotePodCIDRs and RemoteExternalCIDR are the peer's, as this cluster sees them.
	RemotePodCIDRs []string
	// RemoteExternalCIDR is the peer's external CIDR as this cluster sees it.
	RemoteExternalCIDR string
}

// MutateMasqueradeBypass brings the nftables table every node's fabric agent applies for the
// peering of cfg (upstream's, in a nat chain at postrouting, before source NAT): towards the
// peer's pod and external CIDRs, a local pod keeps its own source (an SNAT to its own CIDR, so
// that the CNI's masquerade does not rewrite it), and any other source is rewritten to
// UnknownSourceIP.
func MutateMasqueradeBypass(fw *netv1beta1.FirewallConfiguration, cfg *netv1beta1.Configuration, o MasqueradeBypassOptions) {
	setLabels(fw, map[string]string{consts.FirewallCategoryLabel: consts.FirewallCategoryFabric,
		consts.FirewallSubCategoryLabel: consts.FirewallSubCategoryAllNodes})
	var rules []firewall.NatRule
	dsts := slices.Clone(o.RemotePodCIDRs)
	if o.RemoteExternalCIDR != "" {
		dsts = append(dsts, o.RemoteExternalCIDR)
	}
	for i, dst := range dsts {
		ext := o.RemoteExternalCIDR != "" && i == len(dsts)-1
		for _, local := range o.LocalPodCIDRs {
			name := fmt.Sprintf("podcidr-%s-%s-%s", cfg.Name, escapeCIDR(local), escapeCIDR(dst))
			if ext {
				name = fmt.Sprintf("podcidr-%s-ext-%s", cfg.Name, escapeCIDR(local))
			}
			rules = append(rules, snat(name, local, matchIP(firewall.MatchOperationEq, firewall.MatchPositionDst, dst),
				matchIP(firewall.MatchOperationEq, firewall.MatchPositionSrc, local)))
		}
		name := fmt.Sprintf("service-nodeport-%s-%s", cfg.Name, escapeCIDR(dst))
		if ext {
			name = fmt.Sprintf("service-nodeport-%s-ext", cfg.Name)
		}
		match := []firewall.Match{matchIP(firewall.MatchOperationEq, firewall.MatchPositionDst, dst)}
		for _, local := range o.LocalPodCIDRs {
			match = append(match, matchIP(firewall.MatchOperationNeq, firewall.MatchPositionSrc, local))
		}
		rules = append(rules, snat(name, o.UnknownSourceIP, match...))
	}
	fw.Spec.Table = firewall.Table{Name: ptr.To(MasqueradeBypassName(cfg)), Family: ptr.To(firewall.TableFamilyIPv4),
		Chains: []firewall.Chain{{Name: ptr.To("pre-postrouting"), Type: firewall.ChainTypeNAT, Policy: ptr.To(firewall.ChainPolicyAccept),
			Hook: ptr.To(firewall.ChainHookPostrouting), Priority: ptr.To(firewall.ChainPriorityNATSource - 1),
			Rules: firewall.RulesSet{NatRules: rules}}}}
}

// snat is a source NAT rule named name to to, on match.
func snat(name, to string, match ...firewall.Match) firewall.NatRule {
	return firewall.NatRule{Name: ptr.To(name), NatType: firewall.NatTypeSource, To: ptr.To(to), Match: match}
}

// matchIP matches (or, with neq, does not) the address or CIDR value on side pos.
func matchIP(op firewall.MatchOperation, pos firewall.MatchPosition, value string) firewall.Match {
	return firewall.Match{Op: op, IP: &firewall.MatchIP{Position: pos, Value: value}}
}

// escapeCIDR makes a CIDR fit a name, as upstream does (dots and slash to dashes).
func escapeCIDR(c string) string {
	return strings.NewReplacer("/", "-", ".", "-").Replace(c)
}

// NodePortRoutingName is upstream's name of the gateways' FirewallConfiguration (Liqo
// namespace) that marks the connections of host-network and NodePort traffic with the mark of
// the node they came from, and the suffix of the per-node RouteConfigurations that route the
// answers of that mark back to the node.
const NodePortRoutingName = "service-nodeport-routing"

// NodePortRouteConfigurationName is the name of the gateways' route back to node for its
// host-network and NodePort traffic: "<node>-service-nodeport-routing".
func NodePortRouteConfigurationName(node string) string {
	return node + "-" + NodePortRoutingName
}

// NodeMark is a node's mark for the answers to its host-network and NodePort traffic.
type NodeMark struct {
	// Node is the InternalNode's name (the name of its ctmark rule).
	Node string
	// GatewayInterface is the name of the gateways' tunnel link to the node.
	GatewayInterface string
	// Mark is the node's mark (1 and up).
	Mark int
}

// NodePortMarks reads the marks of fw (a NodePortRoutingName FirewallConfiguration): the value of
// each ctmark rule, by rule name (the node's); rules whose value is not a positive number are
// skipped.
func NodePortMarks(fw *netv1beta1.FirewallConfiguration) map[string]int {
	out := map[string]int{}
	for _, c := range fw.Spec.Table.Chains {
		for _, r := range c.Rules.FilterRules {
			if r.Action != firewall.ActionCtMark || r.Name == nil {
				continue
			}
			var m int
			if _, err := fmt.Sscanf(ptr.Deref(r.Value, ""), "%d", &m); err == nil && m > 0 {
				out[*r.Name] = m
			}
		}
	}
	return out
}

// MutateNodePortFirewall brings the gateways' NodePortRoutingName FirewallConfiguration, as
// upstream has it: chain "mark-to-conntrack" (forward) gives the connections from unknownIP (the
// nodes' host-network and NodePort source) coming in on a node's link that node's mark, and chain
// "conntrack-mark-to-meta-mark" (prerouting) copies the connection's mark to the packet's for
// the answers coming back from the peer (input interface consts.GatewayTunnelInterface).
func MutateNodePortFirewall(fw *netv1beta1.FirewallConfiguration, marks []NodeMark, unknownIP string) {
	setLabels(fw, map[string]string{consts.FirewallCategoryLabel: consts.FirewallCategoryGateway,
		consts.FirewallSubCategoryLabel: consts.FirewallSubCategoryFabric, consts.ManagedByLabel: consts.ManagedByControllerManager})
	sorted := slices.Clone(marks)
	slices.SortFunc(sorted, func(a, b NodeMark) int { return a.Mark - b.Mark })
	var ct []firewall.FilterRule
	for _, m := range sorted {
		ct = append(ct, firewall.FilterRule{Name: ptr.To(m.Node), Counter: true, Action: firewall.ActionCtMark, Value: ptr.To(fmt.Sprint(m.Mark)),
			Match: []firewall.Match{matchIP(firewall.MatchOperationEq, firewall.MatchPositionSrc, unknownIP),
				{Op: firewall.MatchOperationEq, Dev: &firewall.MatchDev{Position: firewall.MatchDevPositionIn, Value: m.GatewayInterface}}}})
	}
	restore := firewall.FilterRule{Name: ptr.To("conntrack-mark-to-meta-mark"), Counter: true, Action: firewall.ActionSetMetaMarkFromCtMark,
		Match: []firewall.Match{matchIP(firewall.MatchOperationEq, firewall.MatchPositionDst, unknownIP),
			{Op: firewall.MatchOperationEq, Dev: &firewall.MatchDev{Position: firewall.MatchDevPositionIn, Value: consts.GatewayTunnelInterface}}}}
	fw.Spec.Table = firewall.Table{Name: ptr.To(NodePortRoutingName), Family: ptr.To(firewall.TableFamilyIPv4), Chains: []firewall.Chain{
		{Name: ptr.To("mark-to-conntrack"), Type: firewall.ChainTypeFilter, Policy: ptr.To(firewall.ChainPolicyAccept),
			Hook: ptr.To(firewall.ChainHookForward), Priority: ptr.To(firewall.ChainPriorityFilter), Rules: firewall.RulesSet{FilterRules: ct}},
		{Name: ptr.To("conntrack-mark-to-meta-mark"), Type: firewall.ChainTypeFilter, Policy: ptr.To(firewall.ChainPolicyAccept),
			Hook: ptr.To(firewall.ChainHookPrerouting), Priority: ptr.To(firewall.ChainPriorityFilter),
			Rules: firewall.RulesSet{FilterRules: []firewall.FilterRule{restore}}},
	}}
}

// MutateNodePortRouteConfiguration brings the gateways' route back to the node of in for its
// host-network and NodePort traffic (upstream's): packets to unknownIP with the node's mark go
// to the node's internal address on the gateways' link to it.
func MutateNodePortRouteConfiguration(rc *netv1beta1.RouteConfiguration, in *netv1beta1.InternalNode, mark int, unknownIP string) {
	setLabels(rc, map[string]string{consts.RouteCategoryLabel: consts.RouteCategoryGateway,
		consts.RouteSubCategoryLabel: consts.RouteSubCategoryFabric, consts.ManagedByLabel: consts.ManagedByControllerManager})
	dst := netv1beta1.CIDR(unknownIP + "/32")
	rc.Spec.Table = netv1beta1.Table{Name: NodePortRouteConfigurationName(in.Name), Rules: []netv1beta1.Rule{{
		FwMark: ptr.To(mark), Dst: ptr.To(dst),
		Routes:    []netv1beta1.Route{{Dst: ptr.To(dst), Dev: ptr.To(in.Spec.Interface.Gateway.Name), Gw: ptr.To(in.Spec.Interface.Node.IP)}},
		TargetRef: &corev1.ObjectReference{Kind: netv1beta1.InternalNodeKind, Name: in.Name},
	}}}
}
