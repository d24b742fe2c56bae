package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/action/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

// peeringTestDefaultTimeout bounds an invocation unless timeouts.invoke says otherwise: a
// Connected gateway re-measures its tunnel every 10 seconds.
const peeringTestDefaultTimeout = time.Minute

// peeringTestProbe says what the gateways' probe is, for the results.
const peeringTestProbe = "a UDP echo between the two tunnel addresses, port 51899, through the WireGuard tunnel"

// peeringTestUnchecked says what the action cannot check, for the results.
const peeringTestUnchecked = "Not checked: traffic between pods (a probe from a pod's network namespace, which the provider, " +
	"running outside the clusters, cannot enter)"

// peeringTestAction is liqo_peering_test: it tests the tunnel of a peering between two clusters
// of the provider's clusters map, as liqo_peering names them, through what the gateways report.
type peeringTestAction struct {
	clusterAction
}

type peeringTestModel struct {
	ConsumerCluster types.String   `tfsdk:"consumer_cluster"`
	ProviderCluster types.String   `tfsdk:"provider_cluster"`
	MaxLatency      types.String   `tfsdk:"max_latency"`
	Timeouts        timeouts.Value `tfsdk:"timeouts"`
}

var (
	_ action.ActionWithModifyPlan     = (*peeringTestAction)(nil)
	_ action.ActionWithValidateConfig = (*peeringTestAction)(nil)
)

func newPeeringTestAction() action.Action {
	return &peeringTestAction{clusterAction{clusterAttrs: []string{"consumer_cluster", "provider_cluster"}}}
}

// Metadata names the action liqo_peering_test.
func (a *peeringTestAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_peering_test"
}

// Schema describes liqo_peering_test.
func (a *peeringTestAction) Schema(ctx context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	key := func(side string) schema.StringAttribute {
		return schema.StringAttribute{
			Required: true,
			MarkdownDescription: fmt.Sprintf("Key of the provider's `clusters` map naming the %s cluster of the peering, "+
				"as in `liqo_peering`.", side),
			Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
		}
	}
	resp.Schema = actionSchema(ctx, peeringTestDefaultTimeout,
		"Tests the network tunnel of a peering (`liqo_peering` with `networking = true`, or one made by liqoctl): it "+
			"finds the peering's tenant namespaces from the two clusters' IDs, reads the tunnel's `Connection` on each "+
			"side (`networking.liqo.io/v1beta1`, written by the gateways), and waits until both gateways report it "+
			"`Connected` with a latency measured after the invocation began. That measurement is the gateways' own "+
			"probe, "+peeringTestProbe+": the provider itself cannot send a packet into the tunnel, whose addresses "+
			"exist only in the gateways' network namespaces, so a fresh measurement by both gateways is the probe. "+
			"Progress messages show each side's state; the result gives the latencies, the age of each gateway's last "+
			"WireGuard handshake (from the Connection's `networking.liqo.io/last-handshake` annotation, which this "+
			"project's gateways write; upstream Liqo's do not, and the result says so) and the gateway server's endpoint.\n\n"+
			peeringTestUnchecked+".\n\n"+
			"It fails, naming the Connection, its cluster and what to check, when a side is not `Connected` or has "+
			"not re-measured the tunnel within `timeouts.invoke`, when a latency exceeds `max_latency`, and at once "+
			"when the peering has no tunnel (no gateway for the peer in either tenant namespace). It changes nothing.\n\n"+
			"**Permissions of the Terraform user:** `get` on the ConfigMap `liqo/liqo-clusterid-configmap` and `list` on "+
			"`connections`, `gatewayservers` and `gatewayclients` in the tenant namespaces, in both clusters.",
		map[string]schema.Attribute{
			"consumer_cluster": key("consumer"),
			"provider_cluster": key("provider"),
			"max_latency": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Fail when a side's measured round-trip latency exceeds this duration (e.g. `50ms`); " +
					"unset: any latency passes.",
				Validators: []validator.String{authDurationValidator()},
			},
		})
}

// ValidateConfig refuses a peering of a cluster with itself.
func (a *peeringTestAction) ValidateConfig(ctx context.Context, req action.ValidateConfigRequest, resp *action.ValidateConfigResponse) {
	m, ok := modelOf[peeringTestModel](ctx, req.Config, &resp.Diagnostics)
	if !ok || !known(m.ConsumerCluster) || !known(m.ProviderCluster) {
		return
	}
	if m.ConsumerCluster.Equal(m.ProviderCluster) {
		resp.Diagnostics.AddAttributeError(path.Root("provider_cluster"), "A cluster cannot peer with itself",
			fmt.Sprintf("consumer_cluster and provider_cluster are both %q: name the two clusters of the peering", m.ConsumerCluster.ValueString()))
	}
}

// tunnelSide is one end of the tunnel as the action sees it.
type tunnelSide struct {
	role   string // "consumer" or "provider"
	c      *clusterClient
	ns     string                // the side's tenant namespace for its peer
	remote corev1beta1.ClusterID // the peer's ID
	// conn is the Connection last seen (nil: none).
	conn *netv1beta1.Connection
}

// Invoke tests the tunnel.
func (a *peeringTestAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	const summary = "Testing the peering's tunnel"
	start := time.Now()
	m, ok := modelOf[peeringTestModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	var maxLatency time.Duration
	if !m.MaxLatency.IsNull() {
		var err error
		if maxLatency, err = time.ParseDuration(m.MaxLatency.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("max_latency"), summary, err.Error())
			return
		}
	}
	ctx, cancel, timeout, ok := invocationContext(ctx, m.Timeouts, peeringTestDefaultTimeout, resp)
	if !ok {
		return
	}
	defer cancel()
	sides, err := a.sides(ctx, m)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if err := tunnelExists(ctx, sides); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	err = awaitReporting(ctx, resp, 500*time.Millisecond, timeout,
		"both gateways to report the tunnel Connected with a latency measured after the invocation began",
		func(ctx context.Context) (observation, error) {
			done, seen := true, make([]string, len(sides))
			for i, s := range sides {
				fresh, err := s.observe(ctx, start)
				if err != nil {
					return observation{}, err
				}
				done = done && fresh
				seen[i] = s.describe(start)
			}
			return observation{done: done, seen: strings.Join(seen, "; ")}, nil
		})
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error()+"; "+tunnelHint(ctx, sides))
		return
	}
	var latencies []string
	for _, s := range sides {
		rtt, err := time.ParseDuration(s.conn.Status.Latency.Value)
		if err != nil {
			resp.Diagnostics.AddError(summary, fmt.Sprintf("Connection %s/%s in %s reports latency %q, not a duration: %v",
				s.conn.Namespace, s.conn.Name, s.c.describe(), s.conn.Status.Latency.Value, err))
			return
		}
		if maxLatency > 0 && rtt > maxLatency {
			resp.Diagnostics.AddAttributeError(path.Root("max_latency"), summary, fmt.Sprintf("the tunnel is up, but the latency "+
				"the %s's gateway measured (Connection %s/%s in %s) is %s, above max_latency %s: look at the path between "+
				"the gateways, or raise max_latency", s.role, s.conn.Namespace, s.conn.Name, s.c.describe(), rtt, maxLatency))
			return
		}
		latencies = append(latencies, fmt.Sprintf("%s on the %s's side (%s)", rtt, s.role, s.handshake()))
	}
	progress(resp, "done: the tunnel between %s (%s) and %s (%s) works: both gateways report it Connected and measured it "+
		"after the invocation began (%s): %s%s. %s.", m.ConsumerCluster.ValueString(), sides[1].remote, m.ProviderCluster.ValueString(),
		sides[0].remote, peeringTestProbe, strings.Join(latencies, ", "), serverEndpoint(ctx, sides), peeringTestUnchecked)
}

// sides connects to both clusters and reads their IDs, which name the tenant namespaces.
func (a *peeringTestAction) sides(ctx context.Context, m peeringTestModel) ([]*tunnelSide, error) {
	var sides []*tunnelSide
	ids := map[string]corev1beta1.ClusterID{}
	for _, s := range []struct{ role, key string }{{"consumer", m.ConsumerCluster.ValueString()}, {"provider", m.ProviderCluster.ValueString()}} {
		c, err := a.client(ctx, types.StringValue(s.key), true)
		if err != nil {
			return nil, err
		}
		id, err := peering.ClusterID(ctx, c.peeringCluster(c.describe()))
		if err != nil {
			return nil, fmt.Errorf("%w; the Terraform user needs `get` on ConfigMaps in %s", err, c.liqoNS)
		}
		ids[s.role] = id
		sides = append(sides, &tunnelSide{role: s.role, c: c})
	}
	if ids["consumer"] == ids["provider"] {
		return nil, fmt.Errorf("clusters %q and %q have the same cluster ID %q: a cluster cannot peer with itself", m.ConsumerCluster.ValueString(),
			m.ProviderCluster.ValueString(), ids["consumer"])
	}
	sides[0].remote, sides[0].ns = ids["provider"], peering.TenantNamespace(ids["provider"])
	sides[1].remote, sides[1].ns = ids["consumer"], peering.TenantNamespace(ids["consumer"])
	return sides, nil
}

// gateways counts the side's gateway objects for its peer: servers and clients.
func (s *tunnelSide) gateways(ctx context.Context) (servers []netv1beta1.GatewayServer, clients int, err error) {
	sl, cl := &netv1beta1.GatewayServerList{}, &netv1beta1.GatewayClientList{}
	for _, l := range []client.ObjectList{sl, cl} {
		if err := s.c.ctrl.List(ctx, l, client.InNamespace(s.ns), client.MatchingLabels{consts.RemoteClusterIDLabel: string(s.remote)}); err != nil {
			return nil, 0, fmt.Errorf("listing the gateways of %s in %s of %s: %w", s.remote, s.ns, s.c.describe(), err)
		}
	}
	return sl.Items, len(cl.Items), nil
}

// tunnelExists fails when neither side has a gateway for its peer: the peering has no tunnel.
func tunnelExists(ctx context.Context, sides []*tunnelSide) error {
	var where []string
	for _, s := range sides {
		servers, clients, err := s.gateways(ctx)
		if err != nil {
			return err
		}
		if len(servers)+clients > 0 {
			return nil
		}
		where = append(where, fmt.Sprintf("namespace %s of %s", s.ns, s.c.describe()))
	}
	return fmt.Errorf("the peering has no tunnel to test: no GatewayServer or GatewayClient labelled %s=<peer> in %s. "+
		"A liqo_peering with networking = false has none; set networking = true, or check consumer_cluster and provider_cluster",
		consts.RemoteClusterIDLabel, strings.Join(where, " nor in "))
}

// observe reads the side's Connection for its peer and tells whether it is Connected with a
// latency measured after start.
func (s *tunnelSide) observe(ctx context.Context, start time.Time) (bool, error) {
	conns := &netv1beta1.ConnectionList{}
	if err := s.c.ctrl.List(ctx, conns, client.InNamespace(s.ns), client.MatchingLabels{consts.RemoteClusterIDLabel: string(s.remote)}); err != nil {
		return false, fmt.Errorf("listing the Connections in %s of %s: %w; the Terraform user needs `list` on connections", s.ns, s.c.describe(), err)
	}
	s.conn = nil
	if len(conns.Items) > 0 {
		s.conn = &conns.Items[0]
	}
	return s.conn != nil && s.conn.Status.Value == netv1beta1.Connected && s.conn.Status.Latency.Timestamp.After(start), nil
}

// describe says what the side's gateway reports.
func (s *tunnelSide) describe(start time.Time) string {
	if s.conn == nil {
		return fmt.Sprintf("%s: no Connection for %s in %s of %s yet (the gateway writes it once it runs)", s.role, s.remote, s.ns, s.c.describe())
	}
	st := s.conn.Status
	out := fmt.Sprintf("%s: Connection %s/%s in %s is %s", s.role, s.conn.Namespace, s.conn.Name, s.c.describe(), valueOr(string(st.Value), "not reported"))
	if st.Latency.Value != "" {
		out += fmt.Sprintf(", latency %s measured %s ago", st.Latency.Value, time.Since(st.Latency.Timestamp.Time).Round(time.Second))
		if !st.Latency.Timestamp.After(start) {
			out += " (waiting for a measurement after the invocation began)"
		}
	}
	return out
}

// handshake says when the side's gateway last completed a WireGuard handshake, as its Connection
// reports it (LastHandshakeAnnotation: our gateways write it, upstream Liqo's do not).
func (s *tunnelSide) handshake() string {
	at, ok := s.conn.Annotations[consts.LastHandshakeAnnotation]
	if !ok {
		return "last handshake not reported: the gateway does not write " + consts.LastHandshakeAnnotation
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return fmt.Sprintf("last handshake %q, not a time", at)
	}
	return fmt.Sprintf("last handshake %s ago", time.Since(t).Round(time.Second))
}

// valueOr is s, or def when s is empty.
func valueOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// serverEndpoint names the gateway server's endpoint, for the result ("" when unknown).
func serverEndpoint(ctx context.Context, sides []*tunnelSide) string {
	for _, s := range sides {
		servers, _, err := s.gateways(ctx)
		if err != nil || len(servers) == 0 {
			continue
		}
		if ep := servers[0].Status.Endpoint; ep != nil && len(ep.Addresses) > 0 {
			ports := fmt.Sprint(ep.Ports)
			if ep.Port != 0 {
				ports = fmt.Sprint(ep.Port)
			}
			return fmt.Sprintf("; the gateway server runs on the %s, endpoint %s port %s/UDP", s.role, strings.Join(ep.Addresses, ", "), ports)
		}
		return fmt.Sprintf("; the gateway server runs on the %s (GatewayServer %s/%s), with no endpoint reported", s.role, s.ns, servers[0].Name)
	}
	return ""
}

// tunnelHint says what to check when the tunnel does not come up (after the invocation's
// deadline: it reads the server's endpoint with a few seconds of its own).
func tunnelHint(ctx context.Context, sides []*tunnelSide) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return "a gateway reports Connected only while its probe through the tunnel gets answers: check that both gateways run " +
		"(their pods in the tenant namespaces, and their logs) and that the gateway server's endpoint is reachable over UDP from " +
		"the client's gateway" + serverEndpoint(ctx, sides)
}
