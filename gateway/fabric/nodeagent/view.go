package nodeagent

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gwagent "github.com/peerkit/terraform-provider-liqo/gateway/agent"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// view is what the agent read of the cluster for one reconcile.
type view struct {
	node      string
	me        *netv1beta1.InternalNode // nil: none (yet), or being deleted
	fabrics   []netv1beta1.InternalFabric
	tunnels   []netv1beta1.GeneveTunnel
	nodes     []netv1beta1.InternalNode
	k8sNodes  map[string]*corev1.Node
	firewalls []netv1beta1.FirewallConfiguration
	podIPs    map[string][]netip.Addr // per node, from its "<node>-gw-node" RouteConfiguration
	// marks are the nodes' NodePort marks and unknownIP the source they mark, from the
	// "<node>-service-nodeport-routing" RouteConfigurations.
	marks     map[string]uint32
	unknownIP netip.Addr
	// gatewayLinks are the links of the gateway's side, filled by desired.
	gatewayLinks []string
}

// view reads the objects the node's Desired depends on.
func (r *Reconciler) view(ctx context.Context) (*view, error) {
	v := &view{node: r.NodeName, k8sNodes: map[string]*corev1.Node{}, podIPs: map[string][]netip.Addr{}, marks: map[string]uint32{}}
	me := &netv1beta1.InternalNode{}
	if err := r.Get(ctx, client.ObjectKey{Name: r.NodeName}, me); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading InternalNode %s: %w", r.NodeName, err)
	} else if err == nil && me.DeletionTimestamp.IsZero() {
		v.me = me
	}
	var fabrics netv1beta1.InternalFabricList
	var tunnels netv1beta1.GeneveTunnelList
	var nodes netv1beta1.InternalNodeList
	var k8sNodes corev1.NodeList
	var firewalls netv1beta1.FirewallConfigurationList
	var routes netv1beta1.RouteConfigurationList
	for what, l := range map[string]client.ObjectList{"InternalFabrics": &fabrics, "GeneveTunnels": &tunnels,
		"InternalNodes": &nodes, "Nodes": &k8sNodes} {
		if err := r.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %s: %w", what, err)
		}
	}
	if err := r.List(ctx, &firewalls, client.MatchingLabels{consts.FirewallCategoryLabel: consts.FirewallCategoryFabric}); err != nil {
		return nil, fmt.Errorf("listing the fabric's FirewallConfigurations: %w", err)
	}
	if err := r.List(ctx, &routes, client.InNamespace(r.liqoNamespace()), client.MatchingLabels{
		consts.RouteCategoryLabel: consts.RouteCategoryGateway, consts.RouteSubCategoryLabel: consts.RouteSubCategoryFabric}); err != nil {
		return nil, fmt.Errorf("listing the gateways' RouteConfigurations in %s: %w", r.liqoNamespace(), err)
	}
	v.fabrics = alive(fabrics.Items)
	v.tunnels = alive(tunnels.Items)
	v.nodes = alive(nodes.Items)
	v.firewalls = alive(firewalls.Items)
	for i := range k8sNodes.Items {
		v.k8sNodes[k8sNodes.Items[i].Name] = &k8sNodes.Items[i]
	}
	for i := range routes.Items {
		if node, ok := strings.CutSuffix(routes.Items[i].Name, forge.GatewayNodeRouteConfigurationName("")); ok {
			v.podIPs[node] = podIPs(&routes.Items[i])
		}
		if node, ok := strings.CutSuffix(routes.Items[i].Name, forge.NodePortRouteConfigurationName("")); ok {
			v.nodePortMark(node, &routes.Items[i])
		}
	}
	return v, nil
}

// nodePortMark reads the mark of node and the source it routes back from rc, its
// "<node>-service-nodeport-routing" RouteConfiguration: the rule with a mark and a /32
// destination.
func (v *view) nodePortMark(node string, rc *netv1beta1.RouteConfiguration) {
	for _, rule := range rc.Spec.Table.Rules {
		if rule.FwMark == nil || *rule.FwMark <= 0 || rule.Dst == nil {
			continue
		}
		if p, err := netip.ParsePrefix(string(*rule.Dst)); err == nil && p.Bits() == 32 && p.Addr().Is4() {
			v.marks[node] = uint32(*rule.FwMark) //nolint:gosec // positive, checked above
			v.unknownIP = p.Addr()
			return
		}
	}
}

// alive are the objects of items not being deleted, sorted by namespace and name.
func alive[T any, PT interface {
	*T
	client.Object
}](items []T) []T {
	out := make([]T, 0, len(items))
	for i := range items {
		if PT(&items[i]).GetDeletionTimestamp().IsZero() {
			out = append(out, items[i])
		}
	}
	slices.SortFunc(out, func(a, b T) int {
		return strings.Compare(client.ObjectKeyFromObject(PT(&a)).String(), client.ObjectKeyFromObject(PT(&b)).String())
	})
	return out
}

// podIPs are the /32 routes of the rules on the gateway's tunnel interface of rc: the node's pods.
func podIPs(rc *netv1beta1.RouteConfiguration) []netip.Addr {
	var out []netip.Addr
	for _, rule := range rc.Spec.Table.Rules {
		if rule.Iif == nil {
			continue
		}
		for _, rt := range rule.Routes {
			if rt.Dst == nil {
				continue
			}
			if p, err := netip.ParsePrefix(string(*rt.Dst)); err == nil && p.Bits() == 32 {
				out = append(out, p.Addr())
			}
		}
	}
	return out
}

// tunnelID is the ID of the GeneveTunnel of fabric f and node node (0 is an ID: upstream's
// manager hands them out from 0); ok false when there is none.
func (v *view) tunnelID(f *netv1beta1.InternalFabric, node string) (id uint32, ok bool) {
	for _, t := range v.tunnels {
		if t.Namespace == f.Namespace && t.Labels[consts.InternalFabricNameLabel] == f.Name && t.Labels[consts.InternalNodeNameLabel] == node {
			return t.Spec.ID, true
		}
	}
	return 0, false
}

// tunnelInterface is the name of the tunnel interface to the peer of the gateway that controls
// f (the gateway agent's default name); "" when f has no gateway owner.
func tunnelInterface(f *netv1beta1.InternalFabric) string {
	for _, o := range f.OwnerReferences {
		switch o.Kind {
		case "GatewayServer":
			return gwagent.InterfaceName(gwagent.ModeServer, f.Namespace, o.Name)
		case "GatewayClient":
			return gwagent.InterfaceName(gwagent.ModeClient, f.Namespace, o.Name)
		}
	}
	return ""
}

// addr parses an IP of the API; the zero Addr when it does not parse.
func addr[S ~string](s S) netip.Addr {
	a, _ := netip.ParseAddr(string(s))
	return a
}

// prefixes parses CIDRs of the API, logging and skipping those that do not parse.
func prefixes[S ~string](log logr.Logger, what string, cs []S) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range cs {
		p, err := netip.ParsePrefix(string(c))
		if err != nil {
			log.Info("skipping a CIDR that does not parse", "of", what, "cidr", string(c))
			continue
		}
		out = append(out, p.Masked())
	}
	return out
}
