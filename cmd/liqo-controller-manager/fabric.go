package main

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/peerkit/terraform-provider-liqo/controllers/fabricfirewall"
	"github.com/peerkit/terraform-provider-liqo/controllers/fabricipam"
	"github.com/peerkit/terraform-provider-liqo/controllers/fabricroute"
	"github.com/peerkit/terraform-provider-liqo/controllers/internalfabric"
	"github.com/peerkit/terraform-provider-liqo/controllers/internalnode"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// setupFabric registers the network fabric's reconcilers (issue 32): InternalNodes, the
// gateways' InternalFabrics and the GeneveTunnels (sharing one allocator of the internal CIDR),
// the gateways' routes to the nodes and the nodes' SNAT rules of each peering.
func setupFabric(mgr ctrl.Manager, o *options) error {
	ipam, err := fabricipam.New(mgr.GetAPIReader(), o.identity.InternalCIDR)
	if err != nil {
		return fmt.Errorf("--internal-cidr: %w", err)
	}
	if err := (&internalnode.Reconciler{Client: mgr.GetClient(), IPAM: ipam}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&internalfabric.GatewayReconciler[*netv1beta1.GatewayServer]{Client: mgr.GetClient(), Gateway: internalfabric.ServerKind,
		IPAM: ipam}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&internalfabric.GatewayReconciler[*netv1beta1.GatewayClient]{Client: mgr.GetClient(), Gateway: internalfabric.ClientKind,
		IPAM: ipam}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&internalfabric.TunnelReconciler{Client: mgr.GetClient(), IPAM: ipam, RulePriority: o.fabricRulePriority}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&fabricroute.Reconciler{Client: mgr.GetClient(), LiqoNamespace: o.identity.LiqoNamespace(),
		ExternalCIDR: o.identity.ExternalCIDR}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&fabricfirewall.Reconciler{Client: mgr.GetClient(), PodCIDRs: o.identity.PodCIDRs,
		ExternalCIDR: o.identity.ExternalCIDR}).SetupWithManager(mgr)
}
