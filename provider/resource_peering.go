package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

var (
	_ resource.Resource                   = (*peeringResource)(nil)
	_ resource.ResourceWithConfigure      = (*peeringResource)(nil)
	_ resource.ResourceWithImportState    = (*peeringResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*peeringResource)(nil)
	_ resource.ResourceWithValidateConfig = (*peeringResource)(nil)
)

// peeringDefaultTimeout bounds create, update and delete unless timeouts says otherwise.
const peeringDefaultTimeout = 2 * time.Minute

// Gateway defaults, as `liqoctl peer` has them.
const (
	peeringDefaultServiceType = string(corev1.ServiceTypeLoadBalancer)
	peeringDefaultMTU         = 1340
)

// peeringResource is liqo_peering: the whole `liqoctl peer` flow between two clusters of the
// provider's clusters map, as one resource. It is a thin layer over internal/peering, which does
// every step idempotently; this file maps the schema to its Options and State.
type peeringResource struct {
	clusters *clusterSet
}

type peeringModel struct {
	ID                      types.String   `tfsdk:"id"`
	ConsumerCluster         types.String   `tfsdk:"consumer_cluster"`
	ProviderCluster         types.String   `tfsdk:"provider_cluster"`
	Networking              types.Bool     `tfsdk:"networking"`
	Gateway                 types.Object   `tfsdk:"gateway"`
	CPU                     types.String   `tfsdk:"cpu"`
	Memory                  types.String   `tfsdk:"memory"`
	Pods                    types.String   `tfsdk:"pods"`
	EphemeralStorage        types.String   `tfsdk:"ephemeral_storage"`
	Resources               types.Map      `tfsdk:"resources"`
	ConsumerClusterID       types.String   `tfsdk:"consumer_cluster_id"`
	ProviderClusterID       types.String   `tfsdk:"provider_cluster_id"`
	ConsumerTenantNamespace types.String   `tfsdk:"consumer_tenant_namespace"`
	ProviderTenantNamespace types.String   `tfsdk:"provider_tenant_namespace"`
	VirtualNodeName         types.String   `tfsdk:"virtual_node_name"`
	Granted                 types.Map      `tfsdk:"granted"`
	Status                  types.Object   `tfsdk:"status"`
	Timeouts                timeouts.Value `tfsdk:"timeouts"`
}

type peeringGatewayModel struct {
	ServiceType types.String `tfsdk:"service_type"`
	Port        types.Int64  `tfsdk:"port"`
	NodePort    types.Int64  `tfsdk:"node_port"`
	MTU         types.Int64  `tfsdk:"mtu"`
}

var peeringGatewayAttrTypes = map[string]attr.Type{
	"service_type": types.StringType, "port": types.Int64Type, "node_port": types.Int64Type, "mtu": types.Int64Type,
}

var peeringStatusAttrTypes = map[string]attr.Type{
	"networking": types.StringType, "authentication": types.StringType, "offloading": types.StringType,
}

// peeringDefaultGateway is the gateway attribute when it is not configured.
func peeringDefaultGateway() types.Object {
	return types.ObjectValueMust(peeringGatewayAttrTypes, map[string]attr.Value{
		"service_type": types.StringValue(peeringDefaultServiceType), "port": types.Int64Value(consts.DefaultGatewayPort),
		"node_port": types.Int64Null(), "mtu": types.Int64Value(peeringDefaultMTU),
	})
}

func newPeeringResource() resource.Resource { return &peeringResource{} }

// Metadata names the resource liqo_peering.
func (r *peeringResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_peering"
}

// Configure receives the cluster set made by the provider's Configure.
func (r *peeringResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	set, ok := req.ProviderData.(*clusterSet)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("got %T, want *clusterSet", req.ProviderData))
		return
	}
	r.clusters = set
}

func peeringClusterAttribute(role string) schema.StringAttribute {
	return schema.StringAttribute{
		Required:            true,
		MarkdownDescription: "Key of the provider's `clusters` map naming the " + role + " cluster. Changing it replaces the peering.",
		PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
		Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
	}
}

func peeringQuantityAttribute(what string, required bool) schema.StringAttribute {
	return schema.StringAttribute{
		Required: required, Optional: !required,
		MarkdownDescription: "Quantity of " + what + " the consumer asks of the provider (a Kubernetes quantity); the " +
			"virtual node offers what the provider grants. Changing it re-negotiates the peering in place.",
		Validators: []validator.String{quantityValidator{}},
	}
}

// peeringComputedString is a computed attribute that stays the same for the life of the peering.
func peeringComputedString(desc string) schema.StringAttribute {
	return schema.StringAttribute{
		Computed: true, MarkdownDescription: desc,
		PlanModifiers: []planmodifier.String{peeringKeepKnownState{}},
	}
}

// peeringKeepKnownState plans a computed string as its prior value when that value is known
// and not null; otherwise it stays unknown. (UseStateForUnknown would also carry a null over,
// e.g. a virtual node's name after an update failed while the node was being re-created, and
// the apply that sets it would then be an inconsistent result.)
type peeringKeepKnownState struct{}

// Description says what the modifier does.
func (peeringKeepKnownState) Description(context.Context) string {
	return "the prior value, when known and not null"
}

// MarkdownDescription says what the modifier does.
func (m peeringKeepKnownState) MarkdownDescription(ctx context.Context) string {
	return m.Description(ctx)
}

// PlanModifyString keeps a known, non-null prior value for an unknown planned one.
func (peeringKeepKnownState) PlanModifyString(_ context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if req.State.Raw.IsNull() || !req.PlanValue.IsUnknown() || req.ConfigValue.IsUnknown() ||
		req.StateValue.IsNull() || req.StateValue.IsUnknown() {
		return
	}
	resp.PlanValue = req.StateValue
}

// Schema describes liqo_peering.
func (r *peeringResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A peering of a consumer cluster with a provider cluster, both keys of the provider's `clusters` " +
			"map: what `liqoctl peer` does, in one resource. It makes the tenant namespaces on both sides; the network " +
			"(unless `networking = false`): each side's Configuration of the other, the gateway server on the provider " +
			"and its client on the consumer, their public keys exchanged, both Connections awaited; the authentication " +
			"(the provider's nonce signed by the consumer, the Tenant, the consumer's Identity); and the offloading (a " +
			"ResourceSlice asking for `cpu`, `memory`, `pods`..., and the virtual node standing for what the provider " +
			"granted, awaited Ready). The liqo controller manager must run in both clusters.\n\n" +
			"Changing the requested resources re-negotiates in place; changing a cluster replaces the peering. Two " +
			"`liqo_peering` in opposite directions make a bidirectional peering: they share the tenant namespaces and " +
			"the tunnel (give both the same `networking` and `gateway`), and destroying one leaves the other working. " +
			"Destroy removes, in order, the slice (and with it the virtual node), the identity and the tenant, then the " +
			"network and the tenant namespaces unless the other direction still uses them.\n\n" +
			"A refresh reads the peering back: when its defining objects (the Tenant on the provider, the slice on the " +
			"consumer) are gone it leaves the state and the next apply peers again; the requested resources are read " +
			"from what the provider granted, so a denied or changed grant shows as a difference; and when a module is " +
			"not up (see `status`) the plan shows an in-place update that runs the peering again to repair it.\n\n" +
			"Create, update and delete wait for the clusters' controllers, each within its `timeouts` (default 2m). A " +
			"create that fails half-way leaves the peering in the state, tainted: the next apply removes it and peers again.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`<consumer_cluster>/<provider_cluster>`, also the import ID.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"consumer_cluster": peeringClusterAttribute("consumer (the one that gets a virtual node)"),
			"provider_cluster": peeringClusterAttribute("provider (the one that shares its resources)"),
			"networking": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Connect the two clusters' pod networks through a WireGuard tunnel (gateway server on " +
					"the provider, client on the consumer), and wait until it is up; default `true`. Without it, offloaded " +
					"pods run on the provider but cannot reach the consumer's pods. Changing it replaces the peering.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			},
			"gateway": schema.SingleNestedAttribute{
				Optional: true, Computed: true, Default: objectdefault.StaticValue(peeringDefaultGateway()),
				MarkdownDescription: "How the tunnel is exposed, when `networking` is on; default: a `LoadBalancer` Service on " +
					"port 51840, MTU 1340. Changes are applied in place. In a bidirectional peering both directions share " +
					"one tunnel: give them the same values.",
				Attributes: map[string]schema.Attribute{
					"service_type": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString(peeringDefaultServiceType),
						MarkdownDescription: "Type of the Service exposing the gateway server: `LoadBalancer` (default), `NodePort` or `ClusterIP`.",
						Validators: []validator.String{stringvalidator.OneOf(string(corev1.ServiceTypeLoadBalancer),
							string(corev1.ServiceTypeNodePort), string(corev1.ServiceTypeClusterIP))},
					},
					"port": schema.Int64Attribute{
						Optional: true, Computed: true, Default: int64default.StaticInt64(consts.DefaultGatewayPort),
						MarkdownDescription: "UDP port of the gateway server; default `51840`.",
						Validators:          []validator.Int64{nwPortValidator()},
					},
					"node_port": schema.Int64Attribute{
						Optional:            true,
						MarkdownDescription: "Node port of a `NodePort` or `LoadBalancer` Service; default: one the cluster picks.",
						Validators:          []validator.Int64{nwPortValidator()},
					},
					"mtu": schema.Int64Attribute{
						Optional: true, Computed: true, Default: int64default.StaticInt64(peeringDefaultMTU),
						MarkdownDescription: "MTU of the tunnel interfaces; default `1340`.",
						Validators:          []validator.Int64{int64validator.Between(576, 65535)},
					},
				},
			},
			"cpu":               peeringQuantityAttribute("CPU (e.g. `4` or `500m`)", true),
			"memory":            peeringQuantityAttribute("memory (e.g. `8Gi`)", true),
			"pods":              peeringQuantityAttribute("pods (e.g. `110`, the most the virtual node runs at once)", true),
			"ephemeral_storage": peeringQuantityAttribute("ephemeral storage (`ephemeral-storage`, e.g. `20Gi`)", false),
			"resources": schema.MapAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Other resources asked for, by resource name (e.g. `\"nvidia.com/gpu\" = \"2\"`), as " +
					"quantities. Changing them re-negotiates the peering in place.",
				Validators: []validator.Map{
					mapvalidator.KeysAre(
						stringvalidator.NoneOf("cpu", "memory", "pods", "ephemeral-storage"),
						stringvalidator.RegexMatches(resourceSliceResourceNamePattern, "must be a resource name such as nvidia.com/gpu"),
					),
					mapvalidator.ValueStringsAre(quantityValidator{}),
				},
			},
			"consumer_cluster_id": peeringComputedString("Cluster ID of the consumer (the ForeignCluster's name on the provider)."),
			"provider_cluster_id": peeringComputedString("Cluster ID of the provider (the ForeignCluster's name on the consumer)."),
			"consumer_tenant_namespace": peeringComputedString("Tenant namespace on the consumer holding the peering's objects " +
				"(`liqo-tenant-<provider_cluster_id>`)."),
			"provider_tenant_namespace": peeringComputedString("Tenant namespace on the provider holding the peering's objects " +
				"(`liqo-tenant-<consumer_cluster_id>`)."),
			"virtual_node_name": peeringComputedString("Name of the consumer's virtual node standing for the provider."),
			"granted": schema.MapAttribute{
				Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Resources the provider granted, by resource name: what the virtual node offers.",
			},
			"status": schema.SingleNestedAttribute{
				Computed: true,
				MarkdownDescription: "State of each module, as `liqoctl info peer` shows it. Only states that change when " +
					"the peering does are kept here, so a plan after apply says \"No changes\"; the tunnel's latency, a " +
					"measurement, is in the `liqo_foreign_cluster` data source.",
				Attributes: map[string]schema.Attribute{
					"networking": schema.StringAttribute{Computed: true,
						MarkdownDescription: "`Established`, `Pending`, `Error`, `None`, or `Disabled` (`networking = false`)."},
					"authentication": schema.StringAttribute{Computed: true, MarkdownDescription: "`Established`, `Pending` or `None`."},
					"offloading": schema.StringAttribute{Computed: true,
						MarkdownDescription: "`Ready` (virtual node Ready), `NotReady`, `Pending`, `Error` (slice denied) or `None`."},
				},
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		},
	}
}

// ValidateConfig rejects a peering of a cluster with itself and gateway settings that cannot
// apply, before any cluster is contacted.
func (r *peeringResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var cfg peeringModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if known(cfg.ConsumerCluster) && known(cfg.ProviderCluster) && cfg.ConsumerCluster.ValueString() == cfg.ProviderCluster.ValueString() {
		resp.Diagnostics.AddAttributeError(path.Root("provider_cluster"), "A cluster cannot peer with itself",
			fmt.Sprintf("consumer_cluster and provider_cluster are both %q: name two different keys of the provider's clusters map",
				cfg.ConsumerCluster.ValueString()))
	}
	if cfg.Gateway.IsNull() || cfg.Gateway.IsUnknown() {
		return
	}
	if !cfg.Networking.IsNull() && !cfg.Networking.IsUnknown() && !cfg.Networking.ValueBool() {
		resp.Diagnostics.AddAttributeWarning(path.Root("gateway"), "gateway is ignored without networking",
			"networking = false: no tunnel is made, so the gateway settings have no effect; remove the gateway block or turn networking on")
	}
	var gw peeringGatewayModel
	resp.Diagnostics.Append(cfg.Gateway.As(ctx, &gw, basetypes.ObjectAsOptions{UnhandledNullAsEmpty: true, UnhandledUnknownAsEmpty: true})...)
	if !gw.NodePort.IsNull() && gw.ServiceType.ValueString() == string(corev1.ServiceTypeClusterIP) {
		resp.Diagnostics.AddAttributeError(path.Root("gateway").AtName("node_port"), "node_port needs a NodePort or LoadBalancer service",
			"a ClusterIP Service has no node port: remove node_port or set service_type to NodePort or LoadBalancer")
	}
}

func known(s types.String) bool { return !s.IsNull() && !s.IsUnknown() }

// ModifyPlan checks at plan time, without contacting the clusters, that both cluster keys are
// in the provider's clusters map; keeps the grant in the plan when the requested resources do
// not change; and plans an in-place update when the last refresh found a module not up, so that
// apply runs the (idempotent) peering again and repairs it.
func (r *peeringResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.clusters == nil {
		return // destroy, or the provider is not configured yet
	}
	var plan peeringModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	for _, c := range []struct {
		attr string
		key  types.String
	}{{"consumer_cluster", plan.ConsumerCluster}, {"provider_cluster", plan.ProviderCluster}} {
		if !known(c.key) {
			continue
		}
		if c.key.ValueString() == "" {
			resp.Diagnostics.AddAttributeError(path.Root(c.attr), "Unknown cluster", c.attr+" is empty: name a key of the provider's clusters map")
			continue
		}
		if _, err := r.clusters.lookup(c.key.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root(c.attr), "Unknown cluster", err.Error())
		}
	}
	if resp.Diagnostics.HasError() || req.State.Raw.IsNull() {
		return
	}
	var state peeringModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	want, err1 := plan.requested(ctx)
	had, err2 := state.requested(ctx)
	if err1 == nil && err2 == nil && plan.requestedKnown() && sameQuantities(want, had) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("granted"), state.Granted)...)
	}
	if reason := state.unhealthy(); reason != "" && resp.Plan.Raw.Equal(req.State.Raw) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("status"), types.ObjectUnknown(peeringStatusAttrTypes))...)
		resp.Diagnostics.AddWarning("Peering not up: apply repairs it",
			fmt.Sprintf("liqo_peering %s: %s at the last refresh; applying runs the peering again, which recreates what is missing "+
				"and waits until every module is up.", state.ID.ValueString(), reason))
	}
}

// unhealthy says which module of the recorded status is not up, or "".
func (m *peeringModel) unhealthy() string {
	if m.Status.IsNull() || m.Status.IsUnknown() {
		return ""
	}
	st := map[string]types.String{}
	for k, v := range m.Status.Attributes() {
		if s, ok := v.(types.String); ok {
			st[k] = s
		}
	}
	var bad []string
	if n := st["networking"].ValueString(); n != peering.StatusEstablished && n != peering.StatusDisabled {
		bad = append(bad, "networking is "+n)
	}
	if a := st["authentication"].ValueString(); a != peering.StatusEstablished {
		bad = append(bad, "authentication is "+a)
	}
	if o := st["offloading"].ValueString(); o != peering.StatusReady {
		bad = append(bad, "offloading is "+o)
	}
	return strings.Join(bad, ", ")
}

// requestedKnown tells whether every requested quantity is known in the plan.
func (m *peeringModel) requestedKnown() bool {
	for _, v := range []types.String{m.CPU, m.Memory, m.Pods, m.EphemeralStorage} {
		if v.IsUnknown() {
			return false
		}
	}
	return !m.Resources.IsUnknown()
}

// requested builds the resource list asked of the provider.
func (m *peeringModel) requested(ctx context.Context) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	add := func(attr, name string, v types.String) error {
		if v.IsNull() || v.IsUnknown() {
			return nil
		}
		q, err := kresource.ParseQuantity(v.ValueString())
		if err != nil {
			return fmt.Errorf("%s: %q is not a Kubernetes quantity such as 4, 500m or 8Gi", attr, v.ValueString())
		}
		out[corev1.ResourceName(name)] = q
		return nil
	}
	for _, s := range resourceSliceStandard {
		if err := add(s.attr, string(s.name), m.standard(s.attr)); err != nil {
			return nil, err
		}
	}
	if !m.Resources.IsNull() && !m.Resources.IsUnknown() {
		extra := map[string]types.String{}
		if d := m.Resources.ElementsAs(ctx, &extra, false); d.HasError() {
			return nil, fmt.Errorf("reading resources: %w", diagsError(d))
		}
		for k, v := range extra {
			if err := add(fmt.Sprintf("resources[%q]", k), k, v); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (m *peeringModel) standard(attr string) types.String {
	switch attr {
	case "cpu":
		return m.CPU
	case "memory":
		return m.Memory
	case "pods":
		return m.Pods
	default:
		return m.EphemeralStorage
	}
}

func (m *peeringModel) setStandard(attr string, v types.String) {
	switch attr {
	case "cpu":
		m.CPU = v
	case "memory":
		m.Memory = v
	case "pods":
		m.Pods = v
	default:
		m.EphemeralStorage = v
	}
}

// options builds the library's options from the model.
func (m *peeringModel) options(ctx context.Context) (peering.Options, error) {
	res, err := m.requested(ctx)
	if err != nil {
		return peering.Options{}, err
	}
	opts := peering.Options{Networking: m.Networking.IsNull() || m.Networking.ValueBool(), Resources: res}
	gwObj := m.Gateway
	if gwObj.IsNull() || gwObj.IsUnknown() {
		gwObj = peeringDefaultGateway()
	}
	var gw peeringGatewayModel
	if d := gwObj.As(ctx, &gw, basetypes.ObjectAsOptions{}); d.HasError() {
		return peering.Options{}, fmt.Errorf("reading gateway: %w", diagsError(d))
	}
	opts.Gateway = peering.Gateway{ServiceType: corev1.ServiceType(gw.ServiceType.ValueString()),
		Port: int32(gw.Port.ValueInt64()), MTU: int(gw.MTU.ValueInt64())} //nolint:gosec // validated to 1..65535
	if !gw.NodePort.IsNull() {
		opts.Gateway.NodePort = int32(gw.NodePort.ValueInt64()) //nolint:gosec // validated to 1..65535
	}
	return opts, nil
}

// refresh sets the computed attributes from the observed state, and each requested resource
// from what the provider granted of it (keeping the configured spelling of equal quantities), so
// a grant that differs from the configuration shows as a difference. Resources the slice does
// not ask for are not requested ones, even when the provider grants them on its own (its
// defaultNodeResources): they show in granted only. A slice that asks for nothing (liqoctl's
// default) asks for whatever the provider grants.
func (m *peeringModel) refresh(ctx context.Context, st *peering.State) error {
	m.ID = types.StringValue(m.ConsumerCluster.ValueString() + "/" + m.ProviderCluster.ValueString())
	m.ConsumerClusterID = types.StringValue(string(st.ConsumerID))
	m.ProviderClusterID = types.StringValue(string(st.ProviderID))
	m.ConsumerTenantNamespace = types.StringValue(st.ConsumerTenantNamespace)
	m.ProviderTenantNamespace = types.StringValue(st.ProviderTenantNamespace)
	m.VirtualNodeName = stringOrNull(st.VirtualNode)
	if m.Gateway.IsNull() || m.Gateway.IsUnknown() {
		m.Gateway = peeringDefaultGateway()
	}
	if m.Networking.IsNull() || m.Networking.IsUnknown() {
		m.Networking = types.BoolValue(st.Networking != peering.StatusDisabled)
	}

	for _, s := range resourceSliceStandard {
		if q, ok := st.Granted[s.name]; ok && asks(st, s.name) {
			m.setStandard(s.attr, offloadingQuantityString(m.standard(s.attr), q))
		} else {
			m.setStandard(s.attr, types.StringNull())
		}
	}
	prior := map[string]types.String{}
	if !m.Resources.IsNull() && !m.Resources.IsUnknown() {
		if d := m.Resources.ElementsAs(ctx, &prior, false); d.HasError() {
			return fmt.Errorf("reading resources: %w", diagsError(d))
		}
	}
	extra := map[string]types.String{}
	granted := map[string]string{}
	for name, q := range st.Granted {
		granted[string(name)] = q.String()
		if isStandardResource(name) || !asks(st, name) {
			continue
		}
		p, ok := prior[string(name)]
		if !ok {
			p = types.StringNull()
		}
		extra[string(name)] = offloadingQuantityString(p, q)
	}
	if len(extra) > 0 || (!m.Resources.IsNull() && !m.Resources.IsUnknown()) {
		v, d := types.MapValueFrom(ctx, types.StringType, extra)
		if d.HasError() {
			return fmt.Errorf("building resources: %w", diagsError(d))
		}
		m.Resources = v
	} else {
		m.Resources = types.MapNull(types.StringType)
	}
	m.Granted = types.MapNull(types.StringType)
	if len(granted) > 0 {
		v, d := types.MapValueFrom(ctx, types.StringType, granted)
		if d.HasError() {
			return fmt.Errorf("building granted: %w", diagsError(d))
		}
		m.Granted = v
	}
	status, d := types.ObjectValue(peeringStatusAttrTypes, map[string]attr.Value{
		"networking": types.StringValue(st.Networking), "authentication": types.StringValue(st.Authentication),
		"offloading": types.StringValue(st.Offloading),
	})
	if d.HasError() {
		return fmt.Errorf("building status: %w", diagsError(d))
	}
	m.Status = status
	return nil
}

// sameQuantities compares two resource lists by quantity.
func sameQuantities(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		o, ok := b[k]
		if !ok || o.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// peeringLocks serialise the operations on one pair of clusters within this provider process:
// the two directions of a bidirectional peering share the tenant namespaces and the tunnel, and
// Terraform creates and destroys them in parallel (each would find the shared objects half made
// or half gone).
var peeringLocks sync.Map // string → chan struct{}

// lockPair takes the lock of the unordered pair {a, b} of the set, or fails when ctx ends.
func lockPair(ctx context.Context, set *clusterSet, a, b string) (unlock func(), err error) {
	pair := []string{a, b}
	sort.Strings(pair)
	v, _ := peeringLocks.LoadOrStore(fmt.Sprintf("%p/%s/%s", set, pair[0], pair[1]), make(chan struct{}, 1))
	ch, _ := v.(chan struct{})
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for another operation on the peering of %q and %q: %w", a, b, ctx.Err())
	}
}

// sides returns the two clusters of the model with clients, checking that our API is there.
func (r *peeringResource) sides(ctx context.Context, m *peeringModel) (consumer, provider peering.Cluster, err error) {
	if r.clusters == nil {
		return consumer, provider, fmt.Errorf("the liqo provider is not configured")
	}
	var out [2]peering.Cluster
	for i, key := range []string{m.ConsumerCluster.ValueString(), m.ProviderCluster.ValueString()} {
		c, err := r.clusters.getWithLiqo(ctx, key)
		if err != nil {
			return consumer, provider, err
		}
		out[i] = peering.Cluster{Name: fmt.Sprintf("cluster %q", key), Client: c.ctrl}
	}
	return out[0], out[1], nil
}

// describe names the peering in messages.
func (m *peeringModel) describe() string {
	return fmt.Sprintf("peering of consumer %q with provider %q", m.ConsumerCluster.ValueString(), m.ProviderCluster.ValueString())
}

// Create peers the two clusters and waits until every module is up.
//
// A create that fails half-way (a denied request, a timeout, a controller that does not answer)
// saves what it observed in the state, with the error: Terraform marks the peering tainted, so
// the next apply removes it (Unpeer, in order) and peers again, and `terraform destroy` removes
// it. Nothing is orphaned even when the clusters cannot be reached any more, which a best-effort
// Unpeer in the failed create could not promise; the library being idempotent, nothing is lost
// either. Only when nothing was made (the cluster IDs cannot be read) is no state saved.
func (r *peeringResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan peeringModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, peeringDefaultTimeout)
	resp.Diagnostics.Append(d...)
	r.peer(ctx, &plan, timeout, "create", &resp.State, &resp.Diagnostics, true)
}

// Update brings the peering in line with the plan: new resources are re-negotiated and the
// virtual node awaited with the new grant; new gateway parameters are written to the gateways.
func (r *peeringResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior peeringModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, peeringDefaultTimeout)
	resp.Diagnostics.Append(d...)
	if !r.peer(ctx, &plan, timeout, "update", &resp.State, &resp.Diagnostics, false) {
		// The gateway may be half changed: keep the prior values, so the next plan shows the
		// change again (the requested resources come from the grant, whatever it is now).
		prior.Timeouts = plan.Timeouts
		if st := r.observe(ctx, &prior); st != nil && prior.refresh(ctx, st) == nil {
			resp.Diagnostics.Append(resp.State.Set(ctx, &prior)...)
		} else {
			resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
			resp.Diagnostics.Append(resp.State.Set(ctx, &prior)...)
		}
	}
}

// peer runs peering.Peer for the model within timeout and saves the result; it reports whether
// it succeeded. On failure during a create (saveOnError), it saves what it can observe.
func (r *peeringResource) peer(ctx context.Context, plan *peeringModel, timeout time.Duration, op string,
	state *tfsdk.State, diags *diag.Diagnostics, saveOnError bool) bool {
	summary := "Peering " + plan.ConsumerCluster.ValueString() + " with " + plan.ProviderCluster.ValueString()
	opts, err := plan.options(ctx)
	if err != nil {
		diags.AddError(summary, err.Error())
		return false
	}
	consumer, provider, err := r.sides(ctx, plan)
	if err != nil {
		diags.AddError(summary, err.Error())
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	unlock, err := lockPair(ctx, r.clusters, plan.ConsumerCluster.ValueString(), plan.ProviderCluster.ValueString())
	if err != nil {
		diags.AddError(summary, err.Error())
		return false
	}
	defer unlock()
	st, err := peering.Peer(ctx, consumer, provider, opts)
	if err == nil {
		if err := plan.refresh(ctx, st); err != nil {
			diags.AddError(summary, err.Error())
			return false
		}
		diags.Append(state.Set(ctx, plan)...)
		return !diags.HasError()
	}
	detail := fmt.Sprintf("%s (%s): %v", plan.describe(), op, err)
	if ctx.Err() != nil {
		detail += fmt.Sprintf("\n\nThe %s did not finish within %s: raise timeouts.%s if the clusters are slow.", op, timeout, op)
	}
	if saveOnError {
		// A fresh context: the operation's own may have ended.
		obsCtx, obsCancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer obsCancel()
		st, _, oerr := peering.Observe(obsCtx, consumer, provider, opts)
		if oerr == nil && plan.refresh(obsCtx, st) == nil {
			diags.Append(state.Set(obsCtx, plan)...)
			detail += "\n\nWhat was made is saved in the state, tainted: the next apply removes it and peers again; " +
				"terraform destroy removes it."
		}
	}
	diags.AddError(summary, detail)
	return false
}

// observe reads the peering of the model, or nil (and nothing) when it cannot.
func (r *peeringResource) observe(ctx context.Context, m *peeringModel) *peering.State {
	consumer, provider, err := r.sides(ctx, m)
	if err != nil {
		return nil
	}
	opts, err := m.options(ctx)
	if err != nil {
		return nil
	}
	obsCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	st, _, err := peering.Observe(obsCtx, consumer, provider, opts)
	if err != nil {
		return nil
	}
	return st
}

// Read refreshes the peering; a peering whose Tenant or ResourceSlice is gone leaves the
// state, so the next plan peers again.
func (r *peeringResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state peeringModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "Reading the peering of " + state.ConsumerCluster.ValueString() + " with " + state.ProviderCluster.ValueString()
	consumer, provider, err := r.sides(ctx, &state)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	opts := peering.Options{Networking: state.Networking.ValueBool()}
	if state.Networking.IsNull() { // import: does the peering have a network?
		networked, err := peeringHasNetwork(ctx, consumer, provider)
		if err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
			return
		}
		opts.Networking = networked
		state.Networking = types.BoolValue(networked)
	}
	st, found, err := peering.Observe(ctx, consumer, provider, opts)
	if err != nil {
		resp.Diagnostics.AddError(summary, fmt.Sprintf("%s: %v", state.describe(), err))
		return
	}
	if !found {
		resp.State.RemoveResource(ctx)
		return
	}
	if err := state.refresh(ctx, st); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// peeringHasNetwork tells whether the consumer holds a Configuration of the provider's
// networks: the first object the network module makes (for import, where `networking` is not
// known).
func peeringHasNetwork(ctx context.Context, consumer, provider peering.Cluster) (bool, error) {
	pid, err := peering.ClusterID(ctx, provider)
	if err != nil {
		return false, err
	}
	key := client.ObjectKey{Namespace: peering.TenantNamespace(pid), Name: string(pid)}
	err = consumer.Client.Get(ctx, key, &netv1beta1.Configuration{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading Configuration %s on %s: %w", key, consumer.Name, err)
	}
	return true, nil
}

// Delete unpeers: slice and virtual node, identity and tenant, then the network and the tenant
// namespaces unless the peering in the other direction still uses them.
func (r *peeringResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state peeringModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	summary := "Unpeering " + state.ConsumerCluster.ValueString() + " from " + state.ProviderCluster.ValueString()
	timeout, d := state.Timeouts.Delete(ctx, peeringDefaultTimeout)
	resp.Diagnostics.Append(d...)
	consumer, provider, err := r.sides(ctx, &state)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	unlock, err := lockPair(ctx, r.clusters, state.ConsumerCluster.ValueString(), state.ProviderCluster.ValueString())
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	defer unlock()
	if err := peering.Unpeer(ctx, consumer, provider, peering.Options{Networking: state.Networking.ValueBool()}); err != nil {
		detail := fmt.Sprintf("%s (delete): %v", state.describe(), err)
		if ctx.Err() != nil {
			detail += fmt.Sprintf("\n\nThe delete did not finish within %s: raise timeouts.delete, or look at what holds the object.", timeout)
		}
		resp.Diagnostics.AddError(summary, detail)
	}
}

// ImportState takes `<consumer_cluster>/<provider_cluster>` (keys of the provider's clusters map).
func (r *peeringResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	parts := strings.Split(req.ID, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		resp.Diagnostics.AddError("Importing peering",
			fmt.Sprintf("import ID %q is not `<consumer_cluster>/<provider_cluster>` (two keys of the provider's clusters map)", req.ID))
		return
	}
	if parts[0] == parts[1] {
		resp.Diagnostics.AddError("Importing peering", fmt.Sprintf("import ID %q names the same cluster twice", req.ID))
		return
	}
	if r.clusters != nil {
		for _, k := range parts {
			if _, err := r.clusters.lookup(k); err != nil {
				resp.Diagnostics.AddError("Importing peering", err.Error())
				return
			}
		}
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("consumer_cluster"), parts[0])...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("provider_cluster"), parts[1])...)
}

// asks says whether the observed slice asks for resource name: it does when it names it, or
// when it names nothing (then the provider's grant is the ask).
func asks(st *peering.State, name corev1.ResourceName) bool {
	if len(st.Asked) == 0 {
		return true
	}
	_, ok := st.Asked[name]
	return ok
}
