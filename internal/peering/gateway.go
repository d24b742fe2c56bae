package peering

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/gateway/workload"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// serverRefused reads GatewayServer gw again on s and, when its controller does not run its
// gateway (another GatewayServer of that cluster uses its UDP port: workload.PortRefusal),
// returns an error that ends the wait at once, with the controller's reason and the fix.
func serverRefused(ctx context.Context, s side, gw *netv1beta1.GatewayServer) error {
	cur := &netv1beta1.GatewayServer{}
	if err := s.c.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur); err != nil {
		return fmt.Errorf("reading GatewayServer %s/%s on %s: %w", gw.Namespace, gw.Name, s.c.Name, err)
	}
	why := workload.PortRefusal(cur)
	if why == "" {
		return nil
	}
	fix := fmt.Sprintf("give this peering's gateway a port no other GatewayServer of %s uses (gateway.port)", s.c.Name)
	if free, err := workload.FreePort(ctx, s.c.Client, workload.ListenPort(cur)); err == nil && free != 0 {
		fix = fmt.Sprintf("set gateway.port = %d (or another port no GatewayServer of %s uses) in this peering", free, s.c.Name)
	}
	return stop("the gateway server of this peering does not run: GatewayServer %s/%s on %s: %s. Fix: %s",
		cur.Namespace, cur.Name, s.c.Name, why, fix)
}
