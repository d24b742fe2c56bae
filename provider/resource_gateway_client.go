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
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

var (
	_ resource.Resource                = (*gatewayClientResource)(nil)
	_ resource.ResourceWithConfigure   = (*gatewayClientResource)(nil)
	_ resource.ResourceWithImportState = (*gatewayClientResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*gatewayClientResource)(nil)
)

// gatewayClientResource manages a GatewayClient: the tunnel end that connects to the peer's
// gateway server.
type gatewayClientResource struct {
	clusterResource
}

type gatewayClientModel struct {
	ID                types.String   `tfsdk:"id"`
	Cluster           types.String   `tfsdk:"cluster"`
	Namespace         types.String   `tfsdk:"namespace"`
	Name              types.String   `tfsdk:"name"`
	RemoteClusterID   types.String   `tfsdk:"remote_cluster_id"`
	EndpointAddresses types.List     `tfsdk:"endpoint_addresses"`
	EndpointPort      types.Int64    `tfsdk:"endpoint_port"`
	EndpointProtocol  types.String   `tfsdk:"endpoint_protocol"`
	MTU               types.Int64    `tfsdk:"mtu"`
	SecretRef         types.String   `tfsdk:"secret_ref"`
	ClientTemplate    types.Object   `tfsdk:"client_template"`
	Timeouts          timeouts.Value `tfsdk:"timeouts"`
}

func newGatewayClientResource() resource.Resource { return &gatewayClientResource{} }

// Metadata names the resource liqo_gateway_client.
func (r *gatewayClientResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_gateway_client"
}

// Schema describes liqo_gateway_client.
func (r *gatewayClientResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The WireGuard gateway client of one peering: a `GatewayClient` (networking.liqo.io/v1beta1) in the " +
			"tenant namespace, labelled `liqo.io/remote-cluster-id`, that connects to the peer's gateway server at " +
			"`endpoint_addresses`:`endpoint_port` (e.g. the peer's `liqo_gateway_server.<name>.endpoint_addresses`, or a " +
			"node address and the server's fixed `node_port`).",
		Attributes: map[string]schema.Attribute{
			"id":                idAttribute("[cluster/]namespace/name"),
			"cluster":           clusterAttribute(),
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
			"endpoint_protocol": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(string(corev1.ProtocolUDP)),
				MarkdownDescription: "Transport protocol of the endpoint: `UDP` (default, WireGuard's) or `TCP`. In place.",
				Validators:          []validator.String{stringvalidator.OneOf(string(corev1.ProtocolUDP), string(corev1.ProtocolTCP))},
			},
			"mtu": nwMTUAttribute(),
			"secret_ref": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Name of the Secret in the same namespace holding the gateway's WireGuard keys " +
					"(`liqo_gateway_keys.<name>.name`). Left out, the operator makes its own keys. In place.",
				Validators: []validator.String{nwNameValidator()},
			},
			"client_template": nwTemplateAttribute("WgGatewayClientTemplate", "wireguard-client", "gateway client"),
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Delete: true}),
		},
	}
}

// ModifyPlan checks the cluster key.
func (r *gatewayClientResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.clusterResource.ModifyPlan(ctx, req, resp)
}

// apply writes the model into the object's labels and spec.
func (m *gatewayClientModel) apply(ctx context.Context, gc *networkingv1beta1.GatewayClient) diag.Diagnostics {
	nwSetLabels(gc, nwLabels(m.RemoteClusterID.ValueString(), false))
	addrs, d := nwListStrings(ctx, m.EndpointAddresses)
	gc.Spec.MTU = int(m.MTU.ValueInt64())
	gc.Spec.Endpoint = networkingv1beta1.EndpointStatus{
		Addresses: addrs,
		Port:      nwInt32(m.EndpointPort.ValueInt64()),
		Protocol:  ptr.To(corev1.Protocol(m.EndpointProtocol.ValueString())),
	}
	gc.Spec.SecretRef = corev1.LocalObjectReference{Name: m.SecretRef.ValueString()}
	ref, dt := nwTemplateToAPI(ctx, m.ClientTemplate)
	gc.Spec.ClientTemplateRef = ref
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

// Create makes the GatewayClient.
func (r *gatewayClientResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan gatewayClientModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	const summary = "Creating GatewayClient"
	c, err := r.client(ctx, plan.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	gc := &networkingv1beta1.GatewayClient{ObjectMeta: metav1.ObjectMeta{Name: plan.Name.ValueString(), Namespace: plan.Namespace.ValueString()}}
	resp.Diagnostics.Append(plan.apply(ctx, gc)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := c.ctrl.Create(ctx, gc); err != nil {
		resp.Diagnostics.AddError(summary, nwCreateError("GatewayClient", gc, c, err))
		return
	}
	plan.ID = types.StringValue(objectID(c.name, gc.Namespace, gc.Name))
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Read refreshes the state from the object; a GatewayClient deleted out of band leaves the state.
func (r *gatewayClientResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state gatewayClientModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	const summary = "Reading GatewayClient"
	c, err := r.client(ctx, state.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	gc := &networkingv1beta1.GatewayClient{}
	key := client.ObjectKey{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}
	found, err := readObject(ctx, c, "GatewayClient", key, gc)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if !found {
		resp.State.RemoveResource(ctx)
		return
	}
	resp.Diagnostics.Append(state.read(ctx, c, gc)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update changes the GatewayClient in place.
func (r *gatewayClientResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan gatewayClientModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	const summary = "Updating GatewayClient"
	c, err := r.client(ctx, plan.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	gc := &networkingv1beta1.GatewayClient{}
	key := client.ObjectKey{Namespace: plan.Namespace.ValueString(), Name: plan.Name.ValueString()}
	if err := patchObject(ctx, c, "GatewayClient", key, gc, func() error { return diagsError(plan.apply(ctx, gc)) }); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	plan.ID = types.StringValue(objectID(c.name, gc.Namespace, gc.Name))
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Delete removes the GatewayClient and waits until it is gone.
func (r *gatewayClientResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state gatewayClientModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, 5*time.Minute)
	resp.Diagnostics.Append(d...)
	c, err := r.client(ctx, state.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError("Deleting GatewayClient", err.Error())
		return
	}
	gc := &networkingv1beta1.GatewayClient{ObjectMeta: metav1.ObjectMeta{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}}
	if err := deleteAndWait(ctx, c, gc, timeout); err != nil {
		resp.Diagnostics.AddError("Deleting GatewayClient", err.Error())
	}
}

// ImportState takes `[cluster/]namespace/name`.
func (r *gatewayClientResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	nwImport(ctx, &r.clusterResource, "GatewayClient", &networkingv1beta1.GatewayClient{}, req, resp)
}
