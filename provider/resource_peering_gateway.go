package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

// planGatewayPorts refuses at plan a peering whose gateway server would take a port another
// GatewayServer of its cluster has (gatewayPortTaken), when both clusters can be reached (the
// other one's ID tells this peering's own GatewayServer apart): on create, and when the
// server's side, port or node port changes. A tunnel the other direction made already is reused
// as it is, so it is not checked. What a plan cannot see (two peerings created in one apply)
// the controller finds, and the apply's wait reports.
func (r *peeringResource) planGatewayPorts(ctx context.Context, plan *peeringModel, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if !plan.Networking.Equal(types.BoolValue(true)) || plan.Gateway.IsUnknown() || plan.Gateway.IsNull() {
		return
	}
	var gw peeringGatewayModel
	if d := plan.Gateway.As(ctx, &gw, basetypes.ObjectAsOptions{}); d.HasError() ||
		!known(gw.ServerLocation) || gw.Port.IsUnknown() || gw.NodePort.IsUnknown() {
		return
	}
	if !req.State.Raw.IsNull() {
		var state peeringModel
		var had peeringGatewayModel
		if d := req.State.Get(ctx, &state); d.HasError() || state.Gateway.IsNull() || state.Gateway.IsUnknown() {
			return
		}
		if d := state.Gateway.As(ctx, &had, basetypes.ObjectAsOptions{}); d.HasError() {
			return
		}
		if state.Networking.Equal(plan.Networking) && had.ServerLocation.Equal(gw.ServerLocation) && had.Port.Equal(gw.Port) &&
			had.NodePort.Equal(gw.NodePort) && state.ConsumerCluster.Equal(plan.ConsumerCluster) && state.ProviderCluster.Equal(plan.ProviderCluster) {
			return
		}
	}
	serverKey, peerKey := plan.ProviderCluster.ValueString(), plan.ConsumerCluster.ValueString()
	if gw.ServerLocation.ValueString() == string(corev1beta1.ConsumerRole) {
		serverKey, peerKey = peerKey, serverKey
	}
	ctx, cancel := context.WithTimeout(ctx, gatewayPlanTimeout)
	defer cancel()
	server, peer, ok := r.planSides(ctx, serverKey, peerKey)
	if !ok {
		return
	}
	proposed := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: peering.TenantNamespace(peer.id), Name: string(peer.id)}}
	proposed.Spec.Endpoint.Port = int32(gw.Port.ValueInt64()) //nolint:gosec // validated to 1..65535
	if !gw.NodePort.IsNull() {
		proposed.Spec.Endpoint.NodePort = ptr.To(int32(gw.NodePort.ValueInt64())) //nolint:gosec // validated to 1..65535
	}
	// This peering's own GatewayServer (by upstream's name or another): the one it updates.
	mine := func(o *netv1beta1.GatewayServer) bool {
		return o.Namespace == proposed.Namespace && o.Labels[consts.RemoteClusterIDLabel] == string(peer.id)
	}
	problem, err := gatewayPortTaken(ctx, server.c.ctrl, proposed, mine)
	if err != nil || problem == nil {
		return
	}
	attr := "gateway." + problem.attr
	resp.Diagnostics.AddAttributeError(path.Root("gateway").AtName(problem.attr), "Gateway port in use",
		fmt.Sprintf("%s: its gateway server would run on cluster %q (gateway.server_location = %q), where %s. %s In a "+
			"bidirectional peering, give the other direction the same gateway.", plan.describe(), serverKey,
			gw.ServerLocation.ValueString(), problem.detail, problem.fix(attr)))
}

// planSide is a cluster a plan reached, with its ID.
type planSide struct {
	c  *clusterClient
	id corev1beta1.ClusterID
}

// planSides reaches the cluster that would host the gateway server and its peer, and reads
// their IDs; ok is false when either cannot be reached or read, or when the peer hosts a
// server for this pair already (the other direction's tunnel, which this peering reuses).
func (r *peeringResource) planSides(ctx context.Context, serverKey, peerKey string) (server, peer planSide, ok bool) {
	var sides [2]planSide
	for i, key := range []string{serverKey, peerKey} {
		c, err := r.clusters.getWithLiqo(ctx, key)
		if err != nil {
			return server, peer, false
		}
		id, err := peering.ClusterID(ctx, c.peeringCluster(key))
		if err != nil {
			return server, peer, false
		}
		sides[i] = planSide{c: c, id: id}
	}
	server, peer = sides[0], sides[1]
	reused := &netv1beta1.GatewayServerList{}
	if err := peer.c.ctrl.List(ctx, reused, client.InNamespace(peering.TenantNamespace(server.id)),
		client.MatchingLabels{consts.RemoteClusterIDLabel: string(server.id)}); err != nil || len(reused.Items) > 0 {
		return server, peer, false
	}
	return server, peer, true
}

// peeringGatewayRead is the gateway attribute as the clusters have it, from prior (the state's,
// or the plan's after an apply; null on import): each attribute read back from the tunnel
// (st.Tunnel), so that an import, or a gateway changed outside Terraform, shows as it is. What
// the tunnel does not tell keeps prior's value (on import: the default): the Service type or MTU
// where the GatewayServer leaves them to its template, the client's address and port while the
// server reports no endpoint, and server_location, except on import where it is read as the
// direction that made the tunnel declared it: in a bidirectional peering both directions share
// one tunnel, made by the first of them where its own server_location said, and it stays where
// it is when that direction is destroyed (the other keeps using it), so reading it back on
// refresh would plan to replace the remaining direction for a change nobody made. A client
// address or port configured equal to the server's endpoint is kept as configured.
func peeringGatewayRead(prior types.Object, st *peering.State) (types.Object, error) {
	imported := prior.IsNull() || prior.IsUnknown()
	var attrs map[string]attr.Value
	if imported {
		attrs = peeringGatewayOn(peering.Gateway{ServerOnConsumer: st.ServerOnConsumer}.ServerLocation()).Attributes()
	} else {
		attrs = maps.Clone(prior.Attributes())
		if attrs["server_location"] == nil || attrs["server_location"].IsNull() {
			// A state written before server_location was an attribute: what those releases asked
			// for (in a bidirectional peering, one direction reuses the other's tunnel, server and all).
			attrs["server_location"] = types.StringValue(peeringDefaultServerLocation)
		}
	}
	if t := st.Tunnel; t != nil {
		if imported {
			attrs["server_location"] = types.StringValue(t.ServerLocation())
		}
		if t.ServiceType != "" {
			attrs["service_type"] = types.StringValue(string(t.ServiceType))
		}
		attrs["port"] = types.Int64Value(int64(t.Port))
		attrs["node_port"] = int64OrNull(t.NodePort)
		attrs["load_balancer_ip"] = stringOrNull(t.LoadBalancerIP)
		if t.MTU != 0 {
			attrs["mtu"] = types.Int64Value(int64(t.MTU))
		}
		if t.ClientKnown {
			readClientOverrides(attrs, t)
		}
	}
	gw, d := types.ObjectValue(peeringGatewayAttrTypes, attrs)
	if d.HasError() {
		return gw, fmt.Errorf("building gateway: %w", diagsError(d))
	}
	return gw, nil
}

// readClientOverrides sets client_address and client_port in attrs from what the tunnel's
// client dials, keeping a configured value the client dials (equal to the server's endpoint).
func readClientOverrides(attrs map[string]attr.Value, t *peering.Tunnel) {
	addr, _ := attrs["client_address"].(types.String)
	if !known(addr) || !slices.Equal(t.DialedAddresses, []string{addr.ValueString()}) {
		attrs["client_address"] = stringOrNull(t.ClientAddress)
	}
	port, _ := attrs["client_port"].(types.Int64)
	if port.IsNull() || port.IsUnknown() || int64(t.DialedPort) != port.ValueInt64() {
		attrs["client_port"] = int64OrNull(t.ClientPort)
	}
}

// int64OrNull is n, or null when 0.
func int64OrNull(n int32) types.Int64 {
	if n == 0 {
		return types.Int64Null()
	}
	return types.Int64Value(int64(n))
}
