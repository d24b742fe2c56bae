package workload

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// A gateway server's pod runs in its node's network namespace (renderDeployment), so two of
// them cannot listen on one UDP port of a node; and as the scheduler may put any two on one
// node (and every cluster of ours has the gateway's routes on one node only), each
// GatewayServer of a cluster needs a port of its own. The controller runs the gateway of only
// one GatewayServer per port (PortKeeper; PortConflictAnnotation says why not the others'), and
// the provider refuses at plan a peering whose server would take a port in use.

// ListenPort is the UDP port a GatewayServer's gateway listens on: the endpoint's port, else
// its first port, else consts.DefaultGatewayPort.
func ListenPort(gw *netv1beta1.GatewayServer) int32 {
	switch {
	case gw.Spec.Endpoint.Port != 0:
		return gw.Spec.Endpoint.Port
	case len(gw.Spec.Endpoint.Ports) > 0:
		return gw.Spec.Endpoint.Ports[0]
	default:
		return consts.DefaultGatewayPort
	}
}

// Others returns the GatewayServers of c's cluster, not being deleted, other than gw, whose
// gateway listens on gw's UDP port.
func Others(ctx context.Context, c client.Reader, gw *netv1beta1.GatewayServer) ([]netv1beta1.GatewayServer, error) {
	list := &netv1beta1.GatewayServerList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing the GatewayServers: %w", err)
	}
	port := ListenPort(gw)
	var out []netv1beta1.GatewayServer
	for _, o := range list.Items {
		if o.DeletionTimestamp == nil && (o.Namespace != gw.Namespace || o.Name != gw.Name) && ListenPort(&o) == port {
			out = append(out, o)
		}
	}
	return out, nil
}

// PortKeeper returns the GatewayServer of c's cluster whose gateway keeps gw's UDP port, when it
// is not gw: among gw and the Others on its port, the first that holds the port (its Deployment
// runs a replica listening on it), else the first of all; first is the earliest created (in
// the same second, the first by namespace/name). A GatewayServer that changes its port to a
// running one's thus never stops that one. nil when gw keeps its port.
func PortKeeper(ctx context.Context, c client.Reader, gw *netv1beta1.GatewayServer) (*netv1beta1.GatewayServer, error) {
	others, err := Others(ctx, c, gw)
	if err != nil || len(others) == 0 {
		return nil, err
	}
	candidates := make([]*netv1beta1.GatewayServer, 0, len(others)+1)
	candidates = append(candidates, gw)
	for i := range others {
		candidates = append(candidates, &others[i])
	}
	var first, firstHolder *netv1beta1.GatewayServer
	for _, g := range candidates {
		if first == nil || before(g, first) {
			first = g
		}
		holds, err := holdsPort(ctx, c, g)
		if err != nil {
			return nil, err
		}
		if holds && (firstHolder == nil || before(g, firstHolder)) {
			firstHolder = g
		}
	}
	if firstHolder != nil {
		first = firstHolder
	}
	if first == gw {
		return nil, nil
	}
	return first, nil
}

// holdsPort tells whether gw's Deployment runs a replica listening on its port.
func holdsPort(ctx context.Context, c client.Reader, gw *netv1beta1.GatewayServer) (bool, error) {
	dep := &appsv1.Deployment{}
	err := c.Get(ctx, client.ObjectKey{Namespace: gw.Namespace, Name: Name(gw)}, dep)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the Deployment of GatewayServer %s/%s: %w", gw.Namespace, gw.Name, err)
	}
	if dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0 {
		return false, nil
	}
	port := ListenPort(gw)
	for _, ctr := range dep.Spec.Template.Spec.Containers {
		for _, p := range ctr.Ports {
			if p.Name == PortName && p.ContainerPort == port {
				return true, nil
			}
		}
	}
	return false, nil
}

// before tells whether GatewayServer a came before b; one not created yet comes last.
func before(a, b *netv1beta1.GatewayServer) bool {
	switch {
	case a.CreationTimestamp.IsZero() != b.CreationTimestamp.IsZero():
		return b.CreationTimestamp.IsZero()
	case !a.CreationTimestamp.Equal(&b.CreationTimestamp):
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	default:
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	}
}

// FreePort returns the lowest UDP port from `from` on that no GatewayServer of c's cluster
// listens on (0 when there is none up to 65535).
func FreePort(ctx context.Context, c client.Reader, from int32) (int32, error) {
	list := &netv1beta1.GatewayServerList{}
	if err := c.List(ctx, list); err != nil {
		return 0, fmt.Errorf("listing the GatewayServers: %w", err)
	}
	used := map[int32]bool{}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			used[ListenPort(&list.Items[i])] = true
		}
	}
	for p := from; p > 0 && p <= 65535; p++ {
		if !used[p] {
			return p, nil
		}
	}
	return 0, nil
}

// PortConflict says why a GatewayServer cannot listen on port: keeper, another GatewayServer of
// its cluster, listens on it already; free is a port no GatewayServer there uses (0: none). It
// is what the controller records in consts.PortConflictAnnotation (see PortRefusal).
func PortConflict(keeper *netv1beta1.GatewayServer, port, free int32) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sGatewayServer %s/%s", takenPrefix(port), keeper.Namespace, keeper.Name)
	if remote := keeper.Labels[consts.RemoteClusterIDLabel]; remote != "" {
		fmt.Fprintf(&b, " (the tunnel to cluster %s)", remote)
	}
	b.WriteString(" listens on it already, and each GatewayServer of a cluster needs a port of its own (gateways listen " +
		"in their node's network namespace)")
	if free != 0 {
		fmt.Fprintf(&b, "; port %d is free", free)
	}
	return b.String()
}

func takenPrefix(port int32) string { return fmt.Sprintf("UDP port %d is taken: ", port) }

// PortRefusal returns why the controller does not run gw's gateway, as recorded in
// consts.PortConflictAnnotation, when that was recorded for the port gw has now (a port just
// changed may still carry the old one's); "" when it runs.
func PortRefusal(gw *netv1beta1.GatewayServer) string {
	why := gw.Annotations[consts.PortConflictAnnotation]
	if !strings.HasPrefix(why, takenPrefix(ListenPort(gw))) {
		return ""
	}
	return why
}
