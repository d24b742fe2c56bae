package fabricroute

import (
	"context"
	"fmt"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// nodePort keeps the NodePort routing of the gateways as upstream's manager does: every
// allocated InternalNode has a mark (1 and up, kept once given, the smallest free one for a new
// node) in the FirewallConfiguration "service-nodeport-routing", and, for the InternalNode node
// (in; nil when it is gone), the RouteConfiguration "<node>-service-nodeport-routing" that routes
// that mark back to it. The FirewallConfiguration is deleted with the last mark.
func (r *Reconciler) nodePort(ctx context.Context, node string, in *netv1beta1.InternalNode) error {
	if r.ExternalCIDR == "" {
		return nil
	}
	ext, err := netip.ParsePrefix(r.ExternalCIDR)
	if err != nil {
		return fmt.Errorf("the external CIDR %q does not parse: %w", r.ExternalCIDR, err)
	}
	unknown := ext.Masked().Addr().String()
	ns := consts.LiqoNamespaceOr(r.LiqoNamespace)
	rc := &netv1beta1.RouteConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: forge.NodePortRouteConfigurationName(node)}}
	if in == nil {
		if err := r.Delete(ctx, rc); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting RouteConfiguration %s/%s of the gone InternalNode %s: %w", ns, rc.Name, node, err)
		}
	}
	var nodes netv1beta1.InternalNodeList
	if err := r.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing the InternalNodes: %w", err)
	}
	fw := &netv1beta1.FirewallConfiguration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: forge.NodePortRoutingName}}
	if err := r.Get(ctx, client.ObjectKeyFromObject(fw), fw); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading FirewallConfiguration %s/%s: %w", ns, fw.Name, err)
	}
	marks := assignMarks(forge.NodePortMarks(fw), nodes.Items)
	if len(marks) == 0 {
		if err := r.Delete(ctx, fw); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting FirewallConfiguration %s/%s (no node left): %w", ns, fw.Name, err)
		}
		return nil
	}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, fw, func() error {
		forge.MutateNodePortFirewall(fw, marks, unknown)
		return nil
	}); err != nil {
		return fmt.Errorf("writing FirewallConfiguration %s/%s: %w", ns, fw.Name, err)
	}
	if in == nil {
		return nil
	}
	for _, m := range marks {
		if m.Node != in.Name {
			continue
		}
		if _, err := controllerutil.CreateOrPatch(ctx, r.Client, rc, func() error {
			forge.MutateNodePortRouteConfiguration(rc, in, m.Mark, unknown)
			return controllerutil.SetControllerReference(in, rc, r.Scheme())
		}); err != nil {
			return fmt.Errorf("writing RouteConfiguration %s/%s of InternalNode %s: %w", ns, rc.Name, in.Name, err)
		}
	}
	return nil
}

// assignMarks gives every allocated InternalNode of nodes not being deleted a mark: the one it
// has in have when no other node took it, else the smallest free one from 1.
func assignMarks(have map[string]int, nodes []netv1beta1.InternalNode) []forge.NodeMark {
	used := map[int]bool{}
	var out []forge.NodeMark
	var fresh []*netv1beta1.InternalNode
	for i := range nodes {
		in := &nodes[i]
		if !in.DeletionTimestamp.IsZero() || in.Spec.Interface.Gateway.Name == "" || in.Spec.Interface.Node.IP == "" {
			continue
		}
		if m, ok := have[in.Name]; ok && !used[m] {
			used[m] = true
			out = append(out, forge.NodeMark{Node: in.Name, GatewayInterface: in.Spec.Interface.Gateway.Name, Mark: m})
			continue
		}
		fresh = append(fresh, in)
	}
	next := 1
	for _, in := range fresh {
		for used[next] {
			next++
		}
		used[next] = true
		out = append(out, forge.NodeMark{Node: in.Name, GatewayInterface: in.Spec.Interface.Gateway.Name, Mark: next})
	}
	return out
}
