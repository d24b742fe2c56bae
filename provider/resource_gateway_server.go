package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
)

var _ resource.ResourceWithValidateConfig = (*gatewayServerResource)(nil)

const gatewayServerModule = "liqo_gateway_server"

// gatewayServerResource manages a GatewayServer: the tunnel endpoint the peer's gateway client
// connects to.
type gatewayServerResource struct {
	objectResource[gatewayServerModel, *gatewayServerModel, *networkingv1beta1.GatewayServer]
}

type gatewayServerModel struct {
	namespacedObject
	RemoteClusterID   types.String `tfsdk:"remote_cluster_id"`
	MTU               types.Int64  `tfsdk:"mtu"`
	Port              types.Int64  `tfsdk:"port"`
	ServiceType       types.String `tfsdk:"service_type"`
	NodePort          types.Int64  `tfsdk:"node_port"`
	LoadBalancerIP    types.String `tfsdk:"load_balancer_ip"`
	SecretRef         types.String `tfsdk:"secret_ref"`
	ServerTemplate    types.Object `tfsdk:"server_template"`
	WaitForEndpoint   types.Bool   `tfsdk:"wait_for_endpoint"`
	EndpointAddresses types.List   `tfsdk:"endpoint_addresses"`
	EndpointPort      types.Int64  `tfsdk:"endpoint_port"`
	EndpointProtocol  types.String `tfsdk:"endpoint_protocol"`
}

func newGatewayServerResource() resource.Resource {
	r := &gatewayServerResource{}
	r.objectKind = objectKind[gatewayServerModel, *networkingv1beta1.GatewayServer]{
		typeName: "_gateway_server",
		kind:     "GatewayServer", noun: "GatewayServer", needLiqo: true, namespaced: true, timeout: 5 * time.Minute,
		build: fromPlan((*gatewayServerModel).apply),
		read:  intoState((*gatewayServerModel).read),
		written: func(ctx context.Context, _ *clusterClient, plan *gatewayServerModel, gs *networkingv1beta1.GatewayServer) error {
			return diagsError(plan.readEndpoint(ctx, gs))
		},
		// An update that did not change the exposure kept the reported endpoint.
		kept:  func(plan *gatewayServerModel) bool { return !plan.EndpointPort.IsUnknown() },
		waits: func(plan *gatewayServerModel) bool { return plan.WaitForEndpoint.ValueBool() },
		wait:  gatewayServerWaitEndpoint,
	}
	return r
}

// nwMTUAttribute is the `mtu` attribute of the gateways.
func nwMTUAttribute() schema.Int64Attribute {
	return schema.Int64Attribute{
		Optional: true,
		MarkdownDescription: "MTU of the tunnel interface (Liqo uses 1340 by default). Left out of the object when not " +
			"set, so the gateway's own default applies. Changing it updates the object in place.",
		Validators: []validator.Int64{nwMTUValidator()},
	}
}

// Schema describes liqo_gateway_server.
func (r *gatewayServerResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/name", timeouts.Opts{Create: true, Update: true, Delete: true},
		"The WireGuard gateway server of one peering: a `GatewayServer` (networking.liqo.io/v1beta1) in the "+
			"tenant namespace, labelled `liqo.io/remote-cluster-id`. The liqo controllers run it and expose it "+
			"through a Service; they report where the peer's gateway client can reach it (`endpoint_*`), which is "+
			"what the peer's `liqo_gateway_client` needs. Fix `node_port` or `load_balancer_ip` to know the endpoint "+
			"in advance; or set `wait_for_endpoint` to wait for the controllers to report it.",
		map[string]schema.Attribute{
			"namespace":         nwNamespaceAttribute(),
			"name":              nwNameAttribute("server", "GatewayServer"),
			"remote_cluster_id": nwRemoteClusterIDAttribute(false),
			"mtu":               nwMTUAttribute(),
			"port": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(51840),
				MarkdownDescription: "Port the gateway listens on (`spec.endpoint.port`); default: `51840`. In place. Each " +
					"GatewayServer of a cluster needs a port of its own (gateways listen in their node's network namespace): a " +
					"port another one uses is refused at plan when the cluster can be reached, and the controllers run no gateway " +
					"for a GatewayServer on a port taken (`wait_for_endpoint` then fails with their reason).",
				Validators: []validator.Int64{nwPortValidator()},
			},
			"service_type": enumAttribute(string(corev1.ServiceTypeNodePort),
				"Type of the Service exposing the gateway: `NodePort` (default), `LoadBalancer` or `ClusterIP`. In place.",
				string(corev1.ServiceTypeNodePort), string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeClusterIP)),
			"node_port": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Static node port of the Service (`NodePort` or `LoadBalancer`), so that the peer's client " +
					"can be configured in advance; default: one the cluster picks. In place.",
				Validators: []validator.Int64{nwPortValidator()},
			},
			"load_balancer_ip": optionalString("IP address to ask of a `LoadBalancer` Service (when the load-balancer "+
				"provider supports it). In place.", nwIPValidator()),
			"secret_ref":      nwSecretRefAttribute(),
			"server_template": nwTemplateAttribute("WgGatewayServerTemplate", "wireguard-server", "gateway server"),
			"wait_for_endpoint": flagAttribute(false, "Wait, on create and on updates that change how the server is "+
				"exposed, until the liqo controllers report the endpoint (bounded by `timeouts`); default: `false`. The "+
				"object is in the state before the wait starts, so a timeout leaves it managed (tainted). When `node_port` "+
				"(NodePort) or `load_balancer_ip` (LoadBalancer) is set, the reported endpoint must match it; otherwise, "+
				"after an update, an endpoint reported before the change may still be the one read."),
			"endpoint_addresses": computedStringList("Addresses at which the peer can reach the server " +
				"(`status.endpoint.addresses`), as reported by the controllers; null until they report them."),
			"endpoint_port": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Port at which the peer can reach the server (`status.endpoint.port`); null until reported.",
			},
			"endpoint_protocol": computedString("Transport protocol of the endpoint (`status.endpoint.protocol`, e.g. " +
				"`UDP`); null until reported."),
		})
}

// ValidateConfig rejects exposure settings that the service type ignores.
func (r *gatewayServerResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var cfg gatewayServerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() || cfg.ServiceType.IsUnknown() {
		return
	}
	st := cfg.ServiceType.ValueString()
	if st == "" {
		st = string(corev1.ServiceTypeNodePort)
	}
	if st == string(corev1.ServiceTypeClusterIP) && !cfg.NodePort.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("node_port"), "node_port needs a NodePort or LoadBalancer service",
			"a ClusterIP Service has no node port: remove node_port or set service_type to NodePort or LoadBalancer")
	}
	if st != string(corev1.ServiceTypeLoadBalancer) && !cfg.LoadBalancerIP.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("load_balancer_ip"), "load_balancer_ip needs a LoadBalancer service",
			fmt.Sprintf("service_type is %s, which has no load balancer: remove load_balancer_ip or set service_type = \"LoadBalancer\"", st))
	}
}

// ModifyPlan keeps the reported endpoint in the plan when nothing that decides it changes.
func (r *gatewayServerResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	plan, ok := plannedModel[gatewayServerModel](ctx, &r.clusterResource, req, resp)
	if !ok {
		return
	}
	state, ok := priorModel[gatewayServerModel](ctx, req, resp)
	r.planPorts(ctx, &plan, &state, ok, resp)
	if !ok {
		return
	}
	if state.EndpointPort.IsNull() || !plan.exposureEqual(&state) {
		return // not reported yet, or the exposure changes: known after apply
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("endpoint_addresses"), state.EndpointAddresses)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("endpoint_port"), state.EndpointPort)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("endpoint_protocol"), state.EndpointProtocol)...)
}

// planPorts refuses, when the cluster can be reached, a port the server cannot have there
// (gatewayPortTaken: another GatewayServer's UDP port, another Service's node port): on create,
// and when the name, port or node port changes. The object this one replaces is its own, and so
// is any other of its namespace for the same peer.
func (r *gatewayServerResource) planPorts(ctx context.Context, plan, state *gatewayServerModel, hasState bool, resp *resource.ModifyPlanResponse) {
	if plan.Cluster.IsUnknown() || !known(plan.Namespace) || !known(plan.Name) || plan.Port.IsUnknown() || plan.NodePort.IsUnknown() {
		return
	}
	if hasState && plan.Namespace.Equal(state.Namespace) && plan.Name.Equal(state.Name) && plan.Port.Equal(state.Port) &&
		plan.NodePort.Equal(state.NodePort) && plan.Cluster.Equal(state.Cluster) {
		return
	}
	c, err := r.client(ctx, plan.Cluster, true)
	if err != nil {
		return // not reachable (yet): the controller reports a taken port on the GatewayServer, which wait_for_endpoint reads
	}
	gw := &networkingv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: plan.Namespace.ValueString(), Name: plan.Name.ValueString()}}
	gw.Spec.Endpoint.Port = nwInt32(plan.Port.ValueInt64())
	if !plan.NodePort.IsNull() {
		gw.Spec.Endpoint.NodePort = ptr.To(nwInt32(plan.NodePort.ValueInt64()))
	}
	// The one this replaces: the state's, or (Terraform plans a replacement's create without
	// the state) another of the namespace for the same peer, as a tenant namespace holds one
	// peering's tunnel.
	mine := func(o *networkingv1beta1.GatewayServer) bool {
		return hasState && state.Cluster.Equal(plan.Cluster) && o.Namespace == state.Namespace.ValueString() && o.Name == state.Name.ValueString() ||
			o.Namespace == gw.Namespace && known(plan.RemoteClusterID) && o.Labels[consts.RemoteClusterIDLabel] == plan.RemoteClusterID.ValueString()
	}
	checkCtx, cancel := context.WithTimeout(ctx, gatewayPlanTimeout)
	defer cancel()
	problem, err := gatewayPortTaken(checkCtx, c.ctrl, gw, mine)
	if err != nil || problem == nil {
		return
	}
	resp.Diagnostics.AddAttributeError(path.Root(problem.attr), "Gateway port in use",
		fmt.Sprintf("GatewayServer %s/%s on %s: %s. %s", gw.Namespace, gw.Name, c.describe(), problem.detail, problem.fix(problem.attr)))
}

// exposureEqual says whether the attributes that decide the endpoint are the same.
func (m *gatewayServerModel) exposureEqual(o *gatewayServerModel) bool {
	return m.Port.Equal(o.Port) && m.ServiceType.Equal(o.ServiceType) && m.NodePort.Equal(o.NodePort) &&
		m.LoadBalancerIP.Equal(o.LoadBalancerIP)
}

// apply writes the model into the object's labels and spec.
func (m *gatewayServerModel) apply(ctx context.Context, gs *networkingv1beta1.GatewayServer) diag.Diagnostics {
	ref, d := nwTemplateToAPI(ctx, m.ServerTemplate)
	o := forge.GatewayServerOptions{
		MTU: int(m.MTU.ValueInt64()), ServiceType: corev1.ServiceType(m.ServiceType.ValueString()), Port: nwInt32(m.Port.ValueInt64()),
		SecretRef: &corev1.LocalObjectReference{Name: m.SecretRef.ValueString()}, TemplateRef: &ref,
	}
	if !m.NodePort.IsNull() {
		o.NodePort = ptr.To(nwInt32(m.NodePort.ValueInt64()))
	}
	if !m.LoadBalancerIP.IsNull() {
		o.LoadBalancerIP = ptr.To(m.LoadBalancerIP.ValueString())
	}
	forge.MutateGatewayServer(gs, m.RemoteClusterID.ValueString(), o)
	return d
}

// read sets the model from the object (spec and reported endpoint).
func (m *gatewayServerModel) read(ctx context.Context, c *clusterClient, gs *networkingv1beta1.GatewayServer) diag.Diagnostics {
	m.ID = types.StringValue(objectID(c.name, gs.Namespace, gs.Name))
	m.RemoteClusterID = types.StringValue(gs.Labels[consts.RemoteClusterIDLabel])
	m.MTU = types.Int64Null()
	if gs.Spec.MTU != 0 {
		m.MTU = types.Int64Value(int64(gs.Spec.MTU))
	}
	ep := gs.Spec.Endpoint
	switch {
	case ep.Port != 0:
		m.Port = types.Int64Value(int64(ep.Port))
	case len(ep.Ports) > 0:
		m.Port = types.Int64Value(int64(ep.Ports[0]))
	default:
		m.Port = types.Int64Null()
	}
	m.ServiceType = stringOrNull(string(ep.ServiceType))
	switch {
	case ep.NodePort != nil:
		m.NodePort = types.Int64Value(int64(*ep.NodePort))
	case len(ep.NodePorts) > 0:
		m.NodePort = types.Int64Value(int64(ep.NodePorts[0]))
	default:
		m.NodePort = types.Int64Null()
	}
	m.LoadBalancerIP = types.StringNull()
	if ep.LoadBalancerIP != nil {
		m.LoadBalancerIP = stringOrNull(*ep.LoadBalancerIP)
	}
	m.SecretRef = stringOrNull(gs.Spec.SecretRef.Name)
	m.ServerTemplate = nwTemplateFromAPI(gs.Spec.ServerTemplateRef)
	if m.WaitForEndpoint.IsNull() || m.WaitForEndpoint.IsUnknown() {
		m.WaitForEndpoint = types.BoolValue(false)
	}
	return m.readEndpoint(ctx, gs)
}

// readEndpoint sets the endpoint attributes from the status; null when not reported.
func (m *gatewayServerModel) readEndpoint(ctx context.Context, gs *networkingv1beta1.GatewayServer) diag.Diagnostics {
	addrs, port, proto := gatewayServerEndpoint(gs)
	var d diag.Diagnostics
	m.EndpointAddresses, d = nwStringList(ctx, addrs)
	m.EndpointPort = types.Int64Null()
	if port != 0 {
		m.EndpointPort = types.Int64Value(int64(port))
	}
	m.EndpointProtocol = stringOrNull(proto)
	return d
}

// gatewayServerEndpoint returns the reported endpoint, if any.
func gatewayServerEndpoint(gs *networkingv1beta1.GatewayServer) (addrs []string, port int32, proto string) {
	ep := gs.Status.Endpoint
	if ep == nil {
		return nil, 0, ""
	}
	port = ep.Port
	if port == 0 && len(ep.Ports) > 0 {
		port = ep.Ports[0]
	}
	if ep.Protocol != nil {
		proto = string(*ep.Protocol)
	}
	return ep.Addresses, port, proto
}

// gatewayServerWaitEndpoint waits until the controllers report the endpoint. Where the configuration pins
// it (a NodePort service's node_port, a load balancer's load_balancer_ip), the reported endpoint
// must match, so that an endpoint reported before an update is not taken for the new one.
func gatewayServerWaitEndpoint(ctx context.Context, c *clusterClient, plan *gatewayServerModel, gs *networkingv1beta1.GatewayServer,
	timeout time.Duration, _ string,
) (*networkingv1beta1.GatewayServer, error) {
	var got *networkingv1beta1.GatewayServer
	refused := ""
	err := nwWait(ctx, c, gatewayServerModule, "GatewayServer", gs, timeout, "the endpoint (status.endpoint) to be reported",
		"wait_for_endpoint", func(o client.Object) (bool, string) {
			cur := o.(*networkingv1beta1.GatewayServer)
			if refused = workload.PortRefusal(cur); refused != "" {
				return true, refused
			}
			addrs, port, proto := gatewayServerEndpoint(cur)
			if cur.Status.Endpoint == nil {
				return false, fmt.Sprintf("no status.endpoint (serverRef %v)", objectRefString(cur.Status.ServerRef))
			}
			seen := fmt.Sprintf("status.endpoint addresses [%s] port %d protocol %q", strings.Join(addrs, ", "), port, proto)
			if len(addrs) == 0 || port == 0 {
				return false, seen
			}
			st := plan.ServiceType.ValueString()
			if st == string(corev1.ServiceTypeNodePort) && !plan.NodePort.IsNull() && int64(port) != plan.NodePort.ValueInt64() {
				return false, seen + fmt.Sprintf(", not yet the node port %d", plan.NodePort.ValueInt64())
			}
			if st == string(corev1.ServiceTypeLoadBalancer) && !plan.LoadBalancerIP.IsNull() && !slices.Contains(addrs, plan.LoadBalancerIP.ValueString()) {
				return false, seen + fmt.Sprintf(", not yet the load balancer IP %s", plan.LoadBalancerIP.ValueString())
			}
			got = cur
			return true, seen
		})
	if err == nil && refused != "" {
		return nil, fmt.Errorf("%s: GatewayServer %s in %s: the liqo controllers do not run its gateway: %s. Set port to a port "+
			"no other GatewayServer of the cluster uses", gatewayServerModule, objectID("", gs.Namespace, gs.Name), c.describe(), refused)
	}
	return got, err
}

// objectRefString shows an optional object reference.
func objectRefString(ref *corev1.ObjectReference) string {
	if ref == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s", ref.Kind, objectID("", ref.Namespace, ref.Name))
}
