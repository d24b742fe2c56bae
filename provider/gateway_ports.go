package provider

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
)

// gatewayPlanTimeout bounds what a plan reads of a cluster to check a gateway server's ports.
const gatewayPlanTimeout = 10 * time.Second

// gatewayPortProblem is a port a GatewayServer about to be written cannot have: attr is the
// attribute at fault ("port" or "node_port"), detail says who has it, and free is a port to
// suggest instead (0: none).
type gatewayPortProblem struct {
	attr   string
	detail string
	free   int32
}

// gatewayPortTaken checks, at plan, the ports of a GatewayServer about to be written to c's
// cluster (gw: its namespace, name and spec; mine tells which existing GatewayServers are this
// one, e.g. its former name in a replacement): its UDP port must be no other GatewayServer's
// there (workload: each needs its own), and a fixed node port no other Service's (the API
// server would refuse the gateway's Service). nil when they are free.
func gatewayPortTaken(ctx context.Context, c client.Reader, gw *networkingv1beta1.GatewayServer,
	mine func(*networkingv1beta1.GatewayServer) bool,
) (*gatewayPortProblem, error) {
	others, err := workload.Others(ctx, c, gw)
	if err != nil {
		return nil, err
	}
	port := workload.ListenPort(gw)
	for i := range others {
		if mine(&others[i]) {
			continue
		}
		free, err := workload.FreePort(ctx, c, port)
		if err != nil {
			return nil, err
		}
		return &gatewayPortProblem{attr: "port", detail: workload.PortConflict(&others[i], port, free), free: free}, nil
	}
	if gw.Spec.Endpoint.NodePort == nil {
		return nil, nil
	}
	return nodePortTaken(ctx, c, gw, *gw.Spec.Endpoint.NodePort, mine)
}

// nodePortTaken finds a Service of c's cluster, other than the gateway's own (those of the
// GatewayServers mine accepts), that has node port n.
func nodePortTaken(ctx context.Context, c client.Reader, gw *networkingv1beta1.GatewayServer, n int32,
	mine func(*networkingv1beta1.GatewayServer) bool,
) (*gatewayPortProblem, error) {
	svcs := &corev1.ServiceList{}
	if err := c.List(ctx, svcs); err != nil {
		return nil, fmt.Errorf("listing the Services: %w", err)
	}
	for _, svc := range svcs.Items {
		owner := metav1.GetControllerOf(&svc)
		own := svc.Namespace == gw.Namespace && svc.Name == workload.Name(gw)
		if owner != nil && owner.Kind == "GatewayServer" {
			own = own || mine(&networkingv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: owner.Name}})
		}
		if own {
			continue
		}
		for _, p := range svc.Spec.Ports {
			if p.NodePort == n {
				return &gatewayPortProblem{attr: "node_port", detail: fmt.Sprintf("node port %d is allocated to Service %s/%s already "+
					"(a node port is unique in a cluster)", n, svc.Namespace, svc.Name)}, nil
			}
		}
	}
	return nil, nil
}

// fix says how to set the attribute (named as the configuration names it, e.g. gateway.port)
// so that the problem goes.
func (p *gatewayPortProblem) fix(attr string) string {
	switch {
	case p.attr == "node_port":
		return fmt.Sprintf("Set %s to a node port no Service of the cluster has, or remove it to let the cluster pick one.", attr)
	case p.free != 0:
		return fmt.Sprintf("Set %s = %d (or another port no GatewayServer of the cluster uses).", attr, p.free)
	default:
		return fmt.Sprintf("Set %s to a port no GatewayServer of the cluster uses.", attr)
	}
}
