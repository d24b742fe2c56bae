package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
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
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	corev1 "k8s.io/api/core/v1"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// peeringClusterAttribute names the cluster of one side of the peering.
func peeringClusterAttribute(role string) schema.StringAttribute {
	return requiredReplaceString("Key of the provider's `clusters` map naming the "+role+" cluster. Changing it "+
		"replaces the peering.", stringvalidator.LengthAtLeast(1))
}

// peeringQuantityAttribute is the quantity of a standard resource the consumer asks for.
func peeringQuantityAttribute(what string) schema.StringAttribute {
	return quantityAttribute(false, "Quantity of "+what+" the consumer asks of the provider (a Kubernetes "+
		"quantity); the virtual node offers what the provider grants. Changing it re-negotiates the peering in place.")
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
		Version:             resourceSchemaVersion,
		MarkdownDescription: peeringDescription,
		Attributes: map[string]schema.Attribute{
			"id":               stableComputedString("`<consumer_cluster>/<provider_cluster>`, also the import ID."),
			"consumer_cluster": peeringClusterAttribute("consumer (the one that gets a virtual node)"),
			"provider_cluster": peeringClusterAttribute("provider (the one that shares its resources)"),
			"networking": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Connect the two clusters' pod networks through a WireGuard tunnel (gateway server on " +
					"the provider, client on the consumer), and wait until it is up; default `true`. Without it, offloaded " +
					"pods run on the provider but cannot reach the consumer's pods. Changing it replaces the peering.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
			},
			"in_band": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Have the consumer's control plane reach the provider's API server through the tunnel, as " +
					"`liqoctl peer --in-band`: for a provider whose API server the consumer's cluster cannot reach. The " +
					"consumer's identity then goes through the provider's API-server proxy (Service `liqo-proxy` in its Liqo " +
					"namespace), at the address of the provider's external CIDR its controller manager gave the proxy (IP " +
					"`api-server-proxy`), as the consumer sees that CIDR, port 8118. Needs `networking`; default `false`. " +
					"Terraform itself still reaches both clusters directly. Changing it replaces the peering.",
				PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplaceIf(
					func(_ context.Context, req planmodifier.BoolRequest, resp *boolplanmodifier.RequiresReplaceIfFuncResponse) {
						resp.RequiresReplace = !req.StateValue.IsNull() // null: a state from before the attribute, read back on refresh
					}, "Changing in_band replaces the peering.", "Changing `in_band` replaces the peering.")},
			},
			"gateway": peeringGatewayAttribute(),
			"cpu":     peeringQuantityAttribute("CPU (e.g. `4` or `500m`); required unless `create_resource_slice = false`"),
			"memory":  peeringQuantityAttribute("memory (e.g. `8Gi`); required unless `create_resource_slice = false`"),
			"pods": withValidators(peeringQuantityAttribute("pods (e.g. `110`, at least 1: the most the virtual node runs at once); "+
				"required unless `create_resource_slice = false`"),
				podsValidator("Ask for at least 1, e.g. pods = \"110\" (the most pods the virtual node runs at once).")),
			"create_resource_slice": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Ask the provider for resources through a ResourceSlice, as `liqoctl peer " +
					"--create-resource-slice`; default `true`. With `false` the peering has a network and an authenticated " +
					"consumer but no slice and no virtual node (e.g. to add `liqo_resource_slice` and virtual nodes of your own " +
					"later); `cpu`, `memory` and `pods` are then not asked. Changing it adds or removes the slice in place.",
			},
			"create_virtual_node": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Have a virtual node stand for the granted slice, as `liqoctl peer --create-virtual-node`; " +
					"default `true`. With `false` the grant is awaited but no virtual node made (`status.offloading` is then " +
					"`Disabled` once granted). Changing it adds or removes the virtual node in place.",
			},
			"resource_slice_class": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(string(authv1beta1.ResourceSliceClassDefault)),
				MarkdownDescription: "Class of the ResourceSlice, as `liqoctl peer --resource-slice-class`; default `default`. " +
					"Liqo's controllers grant only the default class: a slice of another class waits for the provider's " +
					"controller of that class (within `timeouts`). Ours also grant `tethered`, to the cluster the provider " +
					"is tethered to only (`liqo_tethering`): everything the provider shares, whatever the slice asks; " +
					"`cpu`, `memory` and `pods` are then not set (`granted` shows the grant). Changing it replaces the peering.",
				Validators:    dnsLabel("must be a DNS label such as default or gpu"),
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"offer":             offerAcceptAttribute("the resources asked (`cpu`, `memory`, `pods`, ...)"),
			"pod_security":      podSecurityAttribute(),
			"ephemeral_storage": peeringQuantityAttribute("ephemeral storage (`ephemeral-storage`, e.g. `20Gi`)"),
			"resources": quantitiesResourcesAttribute("Other resources asked for, by resource name (e.g. `\"nvidia.com/gpu\" = \"2\"`), as " +
				"quantities. Changing them re-negotiates the peering in place."),
			"consumer_cluster_id": peeringComputedString("Cluster ID of the consumer (the ForeignCluster's name on the provider)."),
			"provider_cluster_id": peeringComputedString("Cluster ID of the provider (the ForeignCluster's name on the consumer)."),
			"consumer_tenant_namespace": peeringComputedString("Tenant namespace on the consumer holding the peering's objects " +
				"(`liqo-tenant-<provider_cluster_id>`)."),
			"provider_tenant_namespace": peeringComputedString("Tenant namespace on the provider holding the peering's objects " +
				"(`liqo-tenant-<consumer_cluster_id>`)."),
			"virtual_node_name": peeringComputedString("Name of the consumer's virtual node standing for the provider."),
			"granted":           computedStringMap("Resources the provider granted, by resource name: what the virtual node offers."),
			"status":            peeringStatusAttribute(),
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		},
	}
}

// peeringDescription is liqo_peering's documentation.
const peeringDescription = "A peering of a consumer cluster with a provider cluster, both keys of the provider's `clusters` " +
	"map: what `liqoctl peer` does, in one resource. It makes the tenant namespaces on both sides; the network " +
	"(unless `networking = false`): each side's Configuration of the other, the gateway server on the provider " +
	"and its client on the consumer, their public keys exchanged, both Connections awaited; the authentication " +
	"(the provider's nonce signed by the consumer, the Tenant, the consumer's Identity); and the offloading (a " +
	"ResourceSlice asking for `cpu`, `memory`, `pods`..., and the virtual node standing for what the provider " +
	"granted, awaited Ready). The liqo controller manager must run in both clusters.\n\n" +
	"Changing the requested resources re-negotiates in place; changing a cluster replaces the peering. Two " +
	"`liqo_peering` in opposite directions make a bidirectional peering: they share the tenant namespaces and " +
	"the tunnel (give both the same `networking` and `gateway`), and destroying one leaves the other working. " +
	"Destroy removes, in order, whatever of it exists: the slice (and with it the virtual node), the identity, the " +
	"tenant and the nonce, then the network and the tenant namespaces (awaited gone) unless the other direction " +
	"still uses them (it holds its Tenant, Identity or slice).\n\n" +
	"A refresh reads the peering back: it leaves the state only when nothing it made remains on either cluster (its " +
	"Tenant, Identity, slice, virtual node, nonce Secrets, and the tenant namespaces with the network unless the " +
	"other direction uses them), and the next apply then peers again; the requested resources are read from what " +
	"the provider granted, so a denied or changed grant shows as a difference; and when a module is not up (see " +
	"`status`, e.g. the slice deleted out of band) the plan shows an in-place update that runs the peering again to " +
	"repair it.\n\n" +
	"Create, update and delete wait for the clusters' controllers, each within its `timeouts` (default 2m); a " +
	"delete that runs out of time names the object still there and what holds it (since when it is terminating, " +
	"its finalizers, or what a namespace's deletion reports remaining). A " +
	"create that fails half-way leaves the peering in the state, tainted, as long as anything it made remains: the " +
	"next apply removes it and peers again, and destroy removes it. Create refuses a peering that exists already in " +
	"this direction (the provider's Tenant of the consumer, the consumer's Identity or slice of the provider, made by " +
	"another state or by liqoctl), naming what exists and how to import it; the other direction of a bidirectional " +
	"peering and what a failed create left before the Tenant are not refused. The plan cannot tell (it also plans " +
	"the create of a replacement, while the peering replaced still exists)."

// peeringGatewayAttribute is liqo_peering's gateway: how the tunnel is exposed.
func peeringGatewayAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true, Computed: true, Default: objectdefault.StaticValue(peeringDefaultGateway()),
		MarkdownDescription: "How the tunnel is exposed, when `networking` is on; default: the provider's server " +
			"behind a `LoadBalancer` Service on port 51840, MTU 1340. Changes are applied in place (but `server_location`). In a bidirectional peering both directions share " +
			"one tunnel: give them the same values.",
		Attributes: map[string]schema.Attribute{
			"server_location": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(peeringDefaultServerLocation),
				MarkdownDescription: "Which cluster hosts the gateway server, as `liqoctl peer --gw-server-service-location`: " +
					"`Provider` (default) or `Consumer` (e.g. when only the consumer can expose a UDP service); the " +
					"other cluster runs the client. A tunnel between the two clusters that exists already (the other " +
					"direction's, in a bidirectional peering) is reused wherever its server is. Changing it replaces the peering.",
				Validators: []validator.String{stringvalidator.OneOf(peeringServerLocations...)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplaceIf(
					func(_ context.Context, req planmodifier.StringRequest, resp *stringplanmodifier.RequiresReplaceIfFuncResponse) {
						resp.RequiresReplace = !req.StateValue.IsNull() // null: a state from before the attribute, read back on refresh
					}, "Changing the side hosting the server replaces the peering.", "Changing the side hosting the server replaces the peering.")},
			},
			"service_type": enumAttribute(peeringDefaultServiceType,
				"Type of the Service exposing the gateway server: `LoadBalancer` (default), `NodePort` or `ClusterIP`.",
				string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeNodePort), string(corev1.ServiceTypeClusterIP)),
			"port": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(consts.DefaultGatewayPort),
				MarkdownDescription: "UDP port of the gateway server; default `51840`. Each GatewayServer of a cluster needs a " +
					"port of its own (gateways listen in their node's network namespace): a port another one of the cluster " +
					"hosting the server uses is refused at plan when that cluster can be reached, else when applying.",
				Validators: []validator.Int64{nwPortValidator()},
			},
			"node_port": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "Node port of a `NodePort` or `LoadBalancer` Service; default: one the cluster picks.",
				Validators:          []validator.Int64{nwPortValidator()},
			},
			"load_balancer_ip": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Address to ask of a `LoadBalancer` Service (where the load balancer supports it), as " +
					"`--gw-server-service-loadbalancerip`.",
				Validators: []validator.String{nwIPValidator()},
			},
			"client_address": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Address (IP or DNS name) the client dials instead of the one the server's Service " +
					"reports, as `--gw-client-address`: for a server behind NAT.",
				Validators: []validator.String{nwHostValidator()},
			},
			"client_port": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "UDP port the client dials instead of the one the server's Service reports, as " +
					"`--gw-client-port`: for a server behind NAT that forwards another port.",
				Validators: []validator.Int64{nwPortValidator()},
			},
			"mtu": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(peeringDefaultMTU),
				MarkdownDescription: "MTU of the tunnel interfaces; default `1340`.",
				Validators:          []validator.Int64{nwMTUValidator()},
			},
		},
	}
}

// peeringStatusAttribute is liqo_peering's status: the state of each module.
func peeringStatusAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Computed: true,
		MarkdownDescription: "State of each module, as `liqoctl info peer` shows it. Only states that change when " +
			"the peering does are kept here, so a plan after apply says \"No changes\"; the tunnel's latency, a " +
			"measurement, is in the `liqo_foreign_cluster` data source.",
		Attributes: map[string]schema.Attribute{
			"networking":     computedString("`Established`, `Pending`, `Error`, `None`, or `Disabled` (`networking = false`)."),
			"authentication": computedString("`Established`, `Pending` or `None`."),
			"offloading":     computedString("`Ready` (virtual node Ready), `NotReady`, `Pending`, `Error` (slice denied) or `None`."),
		},
	}
}

// ValidateConfig rejects a peering of a cluster with itself and gateway settings that cannot
// apply, before any cluster is contacted.
func (r *peeringResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	cfg, ok := modelOf[peeringModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	if known(cfg.ConsumerCluster) && known(cfg.ProviderCluster) && cfg.ConsumerCluster.ValueString() == cfg.ProviderCluster.ValueString() {
		resp.Diagnostics.AddAttributeError(path.Root("provider_cluster"), "A cluster cannot peer with itself",
			fmt.Sprintf("consumer_cluster and provider_cluster are both %q: name two different keys of the provider's clusters map",
				cfg.ConsumerCluster.ValueString()))
	}
	validateOffloading(&cfg, &resp.Diagnostics)
	if cfg.InBand.ValueBool() && cfg.Networking.Equal(types.BoolValue(false)) {
		resp.Diagnostics.AddAttributeError(path.Root("in_band"), "in_band needs networking",
			"in_band = true has the consumer reach the provider's API server through the tunnel, and networking = false makes "+
				"no tunnel: turn networking on, or remove in_band")
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
	if !gw.LoadBalancerIP.IsNull() && known(gw.ServiceType) && gw.ServiceType.ValueString() != string(corev1.ServiceTypeLoadBalancer) {
		resp.Diagnostics.AddAttributeError(path.Root("gateway").AtName("load_balancer_ip"), "load_balancer_ip needs a LoadBalancer service",
			fmt.Sprintf("service_type is %s, which has no load balancer: remove load_balancer_ip or set service_type to LoadBalancer",
				gw.ServiceType.ValueString()))
	}
}

// validateOffloading checks that the quantities asked for come with a slice that asks for them.
func validateOffloading(cfg *peeringModel, diags *diag.Diagnostics) {
	noSlice := !cfg.CreateResourceSlice.IsNull() && !cfg.CreateResourceSlice.IsUnknown() && !cfg.CreateResourceSlice.ValueBool()
	tethered := cfg.ResourceSliceClass.ValueString() == consts.TetheredSliceClass
	for _, q := range []struct {
		attr string
		v    types.String
	}{{"cpu", cfg.CPU}, {"memory", cfg.Memory}, {"pods", cfg.Pods}} {
		switch {
		case tethered && !q.v.IsNull():
			diags.AddAttributeError(path.Root(q.attr), q.attr+" with a tethered slice",
				"resource_slice_class = \"tethered\": the home cluster grants everything it shares to the cluster it is tethered "+
					"to, whatever the slice asks (granted shows it); remove "+q.attr)
		case tethered:
		case !noSlice && q.v.IsNull():
			diags.AddAttributeError(path.Root(q.attr), "Missing "+q.attr,
				q.attr+" is required: set the quantity the consumer asks of the provider, or create_resource_slice = false "+
					"to peer without asking for resources")
		case noSlice && !q.v.IsNull():
			diags.AddAttributeWarning(path.Root(q.attr), q.attr+" is ignored without a resource slice",
				"create_resource_slice = false: nothing is asked of the provider; remove "+q.attr+" or create the slice")
		}
	}
	if !cfg.Offer.IsNull() && (noSlice || tethered) {
		diags.AddAttributeError(path.Root("offer"), "An offer needs a resource slice that asks",
			"offer prices the resources the slice asks, and create_resource_slice = false or a tethered slice asks none: remove "+
				"offer, or create a slice of the default class")
	}
	if noSlice && !cfg.CreateVirtualNode.IsNull() && !cfg.CreateVirtualNode.IsUnknown() && cfg.CreateVirtualNode.ValueBool() {
		diags.AddAttributeError(path.Root("create_virtual_node"), "A virtual node needs a resource slice",
			"create_virtual_node = true stands a virtual node for the slice, and create_resource_slice = false makes none: "+
				"remove create_virtual_node (or set it false), or create the slice")
	}
}
