package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// gatewayClientResource manages a GatewayClient: the tunnel end that connects to the peer's
// gateway server.
type gatewayClientResource struct {
	objectResource[gatewayClientModel, *gatewayClientModel, *networkingv1beta1.GatewayClient]
}

type gatewayClientModel struct {
	namespacedObject
	RemoteClusterID   types.String `tfsdk:"remote_cluster_id"`
	EndpointAddresses types.List   `tfsdk:"endpoint_addresses"`
	EndpointPort      types.Int64  `tfsdk:"endpoint_port"`
	EndpointProtocol  types.String `tfsdk:"endpoint_protocol"`
	MTU               types.Int64  `tfsdk:"mtu"`
	SecretRef         types.String `tfsdk:"secret_ref"`
	ClientTemplate    types.Object `tfsdk:"client_template"`
}

func newGatewayClientResource() resource.Resource {
	r := &gatewayClientResource{}
	r.objectKind = objectKind[gatewayClientModel, *networkingv1beta1.GatewayClient]{
		typeName: "_gateway_client",
		kind:     "GatewayClient", noun: "GatewayClient", needLiqo: true, namespaced: true, timeout: 5 * time.Minute,
		build: fromPlan((*gatewayClientModel).apply),
		read:  intoState((*gatewayClientModel).read),
	}
	return r
}

// Schema describes liqo_gateway_client.
func (r *gatewayClientResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/name", timeouts.Opts{Delete: true},
		"The WireGuard gateway client of one peering: a `GatewayClient` (networking.liqo.io/v1beta1) in the "+
			"tenant namespace, labelled `liqo.io/remote-cluster-id`, that connects to the peer's gateway server at "+
			"`endpoint_addresses`:`endpoint_port` (e.g. the peer's `liqo_gateway_server.<name>.endpoint_addresses`, or a "+
			"node address and the server's fixed `node_port`).",
		map[string]schema.Attribute{
			"namespace":         nwNamespaceAttribute(),
			"name":              nwNameAttribute("client", "GatewayClient"),
			"remote_cluster_id": nwRemoteClusterIDAttribute(false),
			"endpoint_addresses": schema.ListAttribute{
				Required: true, ElementType: types.StringType,
				MarkdownDescription: "Addresses (IPs or host names) of the peer's gateway server (`spec.endpoint.addresses`). In place.",
				Validators: []validator.List{
					listvalidator.SizeAtLeast(1),
					listvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 253)),
				},
			},
			"endpoint_port": schema.Int64Attribute{
				Required:            true,
				MarkdownDescription: "Port of the peer's gateway server (`spec.endpoint.port`), e.g. its node port. In place.",
				Validators:          []validator.Int64{nwPortValidator()},
			},
			"endpoint_protocol": enumAttribute(string(corev1.ProtocolUDP),
				"Transport protocol of the endpoint: `UDP` (default, WireGuard's) or `TCP`. In place.",
				string(corev1.ProtocolUDP), string(corev1.ProtocolTCP)),
			"mtu":             nwMTUAttribute(),
			"secret_ref":      nwSecretRefAttribute(),
			"client_template": nwTemplateAttribute("WgGatewayClientTemplate", "wireguard-client", "gateway client"),
		})
}

// apply writes the model into the object's labels and spec.
func (m *gatewayClientModel) apply(ctx context.Context, gc *networkingv1beta1.GatewayClient) diag.Diagnostics {
	addrs, d := nwListStrings(ctx, m.EndpointAddresses)
	ref, dt := nwTemplateToAPI(ctx, m.ClientTemplate)
	forge.MutateGatewayClient(gc, m.RemoteClusterID.ValueString(), forge.GatewayClientOptions{
		MTU: int(m.MTU.ValueInt64()),
		Endpoint: networkingv1beta1.EndpointStatus{Addresses: addrs, Port: nwInt32(m.EndpointPort.ValueInt64()),
			Protocol: ptr.To(corev1.Protocol(m.EndpointProtocol.ValueString()))},
		SecretRef: &corev1.LocalObjectReference{Name: m.SecretRef.ValueString()}, TemplateRef: &ref,
	})
	return append(d, dt...)
}

// read sets the model from the object.
func (m *gatewayClientModel) read(ctx context.Context, c *clusterClient, gc *networkingv1beta1.GatewayClient) diag.Diagnostics {
	m.ID = types.StringValue(objectID(c.name, gc.Namespace, gc.Name))
	m.RemoteClusterID = types.StringValue(gc.Labels[consts.RemoteClusterIDLabel])
	m.MTU = types.Int64Null()
	if gc.Spec.MTU != 0 {
		m.MTU = types.Int64Value(int64(gc.Spec.MTU))
	}
	ep := gc.Spec.Endpoint
	var d diag.Diagnostics
	m.EndpointAddresses, d = nwStringList(ctx, ep.Addresses)
	switch {
	case ep.Port != 0:
		m.EndpointPort = types.Int64Value(int64(ep.Port))
	case len(ep.Ports) > 0:
		m.EndpointPort = types.Int64Value(int64(ep.Ports[0]))
	default:
		m.EndpointPort = types.Int64Null()
	}
	m.EndpointProtocol = types.StringNull()
	if ep.Protocol != nil {
		m.EndpointProtocol = stringOrNull(string(*ep.Protocol))
	}
	m.SecretRef = stringOrNull(gc.Spec.SecretRef.Name)
	m.ClientTemplate = nwTemplateFromAPI(gc.Spec.ClientTemplateRef)
	return d
}
