package nodeagent

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/utils/ptr"

	"github.com/peerkit/terraform-provider-liqo/gateway/fabric"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1/firewall"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// desired is the node's Desired given the addresses of its network namespace (local): the node's
// side towards the gateways elsewhere, the gateway's side of a gateway hosted here, and the
// fabric's firewall tables for this node.
func (v *view) desired(log logr.Logger, local map[string]bool) fabric.Desired {
	var n fabric.Node
	var hosted []*netv1beta1.InternalFabric
	if v.me != nil {
		n.Address = addr(v.me.Spec.Interface.Node.IP)
	}
	for i := range v.fabrics {
		f := &v.fabrics[i]
		gw := addr(f.Spec.GatewayIP)
		switch {
		case !gw.IsValid():
			continue // the gateway's address is not known yet
		case local[gw.String()]:
			hosted = append(hosted, f)
		case v.me != nil && n.Address.IsValid():
			id, ok := v.tunnelID(f, v.node)
			if !ok {
				log.V(1).Info("no GeneveTunnel for this node and gateway yet", "internalFabric", f.Namespace+"/"+f.Name, "tunnels", len(v.tunnels))
			} else {
				n.Fabrics = append(n.Fabrics, fabric.NodeFabric{Name: f.Name, Interface: f.Spec.Interface.Node.Name, ID: id,
					GatewayAddress: gw, GatewayIP: addr(f.Spec.Interface.Gateway.IP), MTU: tunnelMTU(f.Spec.MTU),
					RemoteCIDRs: prefixes(log, "InternalFabric "+f.Namespace+"/"+f.Name, f.Spec.RemoteCIDRs)})
			}
		}
	}
	d := fabric.NodeDesired(n)
	for i := range v.firewalls {
		if fw, ok := v.firewall(log, &v.firewalls[i]); ok {
			d.Firewalls = append(d.Firewalls, fw)
		}
	}
	v.gatewayLinks = nil
	sides := []fabric.Desired{d}
	for i, f := range oldestFirst(hosted) {
		gd := fabric.GatewayDesired(v.gateway(log, f, i > 0))
		for _, t := range gd.Tunnels {
			v.gatewayLinks = append(v.gatewayLinks, t.Name)
		}
		sides = append(sides, gd)
	}
	return fabric.Merge(sides...)
}

// oldestFirst sorts the gateways hosted on this node by age, then namespace and name: the oldest
// keeps upstream's names for its links and tables, and a gateway that comes later does not
// rename the links of those already carrying traffic.
func oldestFirst(hosted []*netv1beta1.InternalFabric) []*netv1beta1.InternalFabric {
	slices.SortStableFunc(hosted, func(a, b *netv1beta1.InternalFabric) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return hosted
}

// gatewayLinkName is the name of the link of the gateway's side for tunnel id when the gateway
// shares its node with an older one, whose links have the InternalNodes' names (upstream names
// one link per node, each gateway being alone in its pod): "liqo-t" and the tunnel's ID in hex,
// unique in the cluster.
func gatewayLinkName(id uint32) string { return fmt.Sprintf("liqo-t%06x", id) }

// tunnelMTU is the MTU of the fabric's links for a gateway whose tunnel to the peer has MTU mtu:
// the same, as upstream sets it (what enters the peer's tunnel fits), or 0 (from the path) when
// mtu is unset or out of the links' range.
func tunnelMTU(mtu int) int {
	if mtu < 576 || mtu > 65535 {
		return 0
	}
	return mtu
}

// gateway is the side of the gateway of f, hosted in this namespace, towards every other node
// that has an address, a tunnel and a source address; shared (another gateway on this node
// came first) gives its links and tables names of their own.
func (v *view) gateway(log logr.Logger, f *netv1beta1.InternalFabric, shared bool) fabric.Gateway {
	g := fabric.Gateway{Address: addr(f.Spec.Interface.Gateway.IP), TunnelInterface: tunnelInterface(f), MTU: tunnelMTU(f.Spec.MTU),
		RemoteCIDRs: prefixes(log, "InternalFabric "+f.Namespace+"/"+f.Name, f.Spec.RemoteCIDRs)}
	if shared {
		g.TablePrefix = f.Namespace + "/" + f.Name + "/"
	}
	if v.unknownIP.IsValid() {
		g.LocalExternalCIDR = netip.PrefixFrom(v.unknownIP, 32)
	}
	perCIDR := true
	for i := range v.nodes {
		in := &v.nodes[i]
		if in.Name == v.node {
			continue
		}
		id, ok := v.tunnelID(f, in.Name)
		nodeIP := addr(in.Spec.Interface.Node.IP)
		remote := addr(ptr.Deref(in.Status.NodeIP.Remote, ""))
		if !ok || !nodeIP.IsValid() || !remote.IsValid() || in.Spec.Interface.Gateway.Name == "" {
			log.V(1).Info("node not ready for the gateway's side yet", "node", in.Name, "id", id, "nodeIP", nodeIP.String(), "remote", remote.String())
			continue
		}
		gn := fabric.GatewayNode{Name: in.Name, Interface: in.Spec.Interface.Gateway.Name, ID: id, NodeAddress: remote, NodeIP: nodeIP,
			PodIPs: v.podIPs[in.Name], Mark: v.marks[in.Name]}
		if shared {
			gn.Interface = gatewayLinkName(id)
		}
		if k := v.k8sNodes[in.Name]; k != nil {
			gn.PodCIDRs = prefixes(log, "Node "+in.Name, k.Spec.PodCIDRs)
		}
		perCIDR = perCIDR && len(gn.PodCIDRs) > 0
		g.Nodes = append(g.Nodes, gn)
	}
	if !perCIDR { // GatewayDesired takes the pod CIDRs only when every node has some
		for i := range g.Nodes {
			g.Nodes[i].PodCIDRs = nil
		}
	}
	return g
}

// firewall is the nftables table of fw when it is for this node and of the shape the dataplane
// takes (source NAT rules of a nat chain at postrouting); ok false otherwise (logged).
func (v *view) firewall(log logr.Logger, fw *netv1beta1.FirewallConfiguration) (fabric.Firewall, bool) {
	switch fw.Labels[consts.FirewallSubCategoryLabel] {
	case consts.FirewallSubCategoryAllNodes:
	case consts.FirewallSubCategorySingleNode:
		if fw.Labels[consts.FirewallUniqueLabel] != v.node {
			return fabric.Firewall{}, false
		}
	default:
		return fabric.Firewall{}, false
	}
	out := fabric.Firewall{Name: ptr.Deref(fw.Spec.Table.Name, fw.Name)}
	for _, c := range fw.Spec.Table.Chains {
		if c.Type != firewall.ChainTypeNAT || ptr.Deref(c.Hook, "") != firewall.ChainHookPostrouting {
			log.Info("skipping a chain the fabric agent does not apply", "firewallConfiguration", fw.Namespace+"/"+fw.Name, "chain", ptr.Deref(c.Name, ""))
			continue
		}
		for _, rule := range c.Rules.NatRules {
			s, ok := snat(rule)
			if !ok {
				log.Info("skipping a NAT rule the fabric agent does not apply", "firewallConfiguration", fw.Namespace+"/"+fw.Name, "rule", ptr.Deref(rule.Name, ""))
				continue
			}
			out.SNAT = append(out.SNAT, s)
		}
	}
	return out, len(out.SNAT) > 0
}

// snat is the dataplane's form of a source NAT rule: a destination, a source or sources it is
// not, and an address or CIDR to; ok false for any other shape.
func snat(r firewall.NatRule) (fabric.SNAT, bool) {
	var s fabric.SNAT
	to, ok := prefix(ptr.Deref(r.To, ""))
	if r.NatType != firewall.NatTypeSource || !ok {
		return s, false
	}
	s.To = to
	for _, m := range r.Match {
		if m.IP == nil {
			return s, false
		}
		p, ok := prefix(m.IP.Value)
		if !ok {
			return s, false
		}
		switch {
		case m.IP.Position == firewall.MatchPositionDst && m.Op == firewall.MatchOperationEq && !s.Dst.IsValid():
			s.Dst = p
		case m.IP.Position == firewall.MatchPositionSrc && m.Op == firewall.MatchOperationEq && !s.Src.IsValid():
			s.Src = p
		case m.IP.Position == firewall.MatchPositionSrc && m.Op == firewall.MatchOperationNeq:
			s.NotSrc = append(s.NotSrc, p)
		default:
			return s, false
		}
	}
	return s, s.Dst.IsValid() && !slices.Contains(s.NotSrc, s.Src)
}

// prefix parses an address (as a /32) or a CIDR.
func prefix(s string) (netip.Prefix, bool) {
	if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
		return netip.PrefixFrom(a, 32), true
	}
	p, err := netip.ParsePrefix(s)
	return p.Masked(), err == nil && p.Addr().Is4()
}
