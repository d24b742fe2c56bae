package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

var (
	_ datasource.DataSource              = (*foreignClusterDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*foreignClusterDataSource)(nil)
)

// foreignClusterDataSource reads the state of the peering with a remote cluster.
type foreignClusterDataSource struct {
	offloadingDataSource
}

type foreignClusterModel struct {
	Cluster               types.String `tfsdk:"cluster"`
	ClusterID             types.String `tfsdk:"cluster_id"`
	Name                  types.String `tfsdk:"name"`
	Role                  types.String `tfsdk:"role"`
	APIServerURL          types.String `tfsdk:"api_server_url"`
	LocalTenantNamespace  types.String `tfsdk:"local_tenant_namespace"`
	RemoteTenantNamespace types.String `tfsdk:"remote_tenant_namespace"`
	Conditions            types.List   `tfsdk:"conditions"`
	Networking            types.Object `tfsdk:"networking"`
	Authentication        types.Object `tfsdk:"authentication"`
	Offloading            types.Object `tfsdk:"offloading"`
	TunnelLatency         types.String `tfsdk:"tunnel_latency"`
}

var (
	fcConditionType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"type": types.StringType, "status": types.StringType, "reason": types.StringType, "message": types.StringType,
	}}
	fcModuleType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"enabled": types.BoolType, "conditions": types.ListType{ElemType: fcConditionType},
	}}
)

func newForeignClusterDataSource() datasource.DataSource { return &foreignClusterDataSource{} }

// Metadata names the data source liqo_foreign_cluster.
func (d *foreignClusterDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_foreign_cluster"
}

func fcConditionsAttribute(what string) schema.ListNestedAttribute {
	return schema.ListNestedAttribute{
		Computed:            true,
		MarkdownDescription: "Conditions of " + what + ".",
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"type": dataSourceComputedString("Condition type, e.g. `NetworkConnectionStatus`."),
			"status": dataSourceComputedString("`None`, `Pending`, `Established`, `Error`, `Ready`, `NotReady` or " +
				"`SomeNotReady`."),
			"reason":  dataSourceComputedString("Machine-readable reason of the last transition."),
			"message": dataSourceComputedString("Human-readable message of the last transition."),
		}},
	}
}

func fcModuleAttribute(module string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Computed:            true,
		MarkdownDescription: "State of the " + module + " module of the peering.",
		Attributes: map[string]schema.Attribute{
			"enabled":    schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the module is in use for this peering."},
			"conditions": fcConditionsAttribute("the " + module + " module"),
		},
	}
}

// Schema describes liqo_foreign_cluster.
func (d *foreignClusterDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The state of the peering with a remote cluster as the liqo controllers of this cluster " +
			"report it: the `ForeignCluster` (`core.liqo.io/v1beta1`, cluster-scoped) of the remote cluster ID, found by " +
			"name or by `spec.clusterID`. Gives the remote cluster's role, its API server, the tenant namespaces and, " +
			"per module (networking, authentication, offloading), whether it is enabled and its conditions.",
		Attributes: map[string]schema.Attribute{
			"cluster": offloadingDataSourceClusterAttribute(),
			"cluster_id": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Cluster ID of the remote cluster.",
				Validators:          []validator.String{clusterIDValidator()},
			},
			"name": dataSourceComputedString("Name of the ForeignCluster object."),
			"role": dataSourceComputedString("Role of the remote cluster seen from this one: `Consumer`, `Provider`, " +
				"`ConsumerAndProvider` or `Unknown`."),
			"api_server_url":          dataSourceComputedString("URL of the remote cluster's API server, when known."),
			"local_tenant_namespace":  dataSourceComputedString("Tenant namespace of the peering in this cluster, when known."),
			"remote_tenant_namespace": dataSourceComputedString("Tenant namespace of the peering in the remote cluster, when known."),
			"conditions":              fcConditionsAttribute("the whole peering (e.g. `APIServerStatus`)"),
			"networking":              fcModuleAttribute("networking"),
			"authentication":          fcModuleAttribute("authentication"),
			"offloading":              fcModuleAttribute("offloading"),
			"tunnel_latency": dataSourceComputedString("Round trip through the tunnel as this cluster's gateway last " +
				"measured it (the `Connection`'s `status.latency` in the local tenant namespace, renewed about every 10 s), " +
				"while it is connected; null otherwise. A measurement: it changes from one read to the next, so an output " +
				"built on it changes at every plan. Resources keep no such value in state."),
		},
	}
}

func fcConditions(conds []corev1beta1.Condition) (types.List, diag.Diagnostics) {
	vals := make([]attr.Value, len(conds))
	for i, c := range conds {
		v, d := types.ObjectValue(fcConditionType.AttrTypes, map[string]attr.Value{
			"type": types.StringValue(string(c.Type)), "status": types.StringValue(string(c.Status)),
			"reason": stringOrNull(c.Reason), "message": stringOrNull(c.Message),
		})
		if d.HasError() {
			return types.ListNull(fcConditionType), d
		}
		vals[i] = v
	}
	return types.ListValue(fcConditionType, vals)
}

func fcModule(m corev1beta1.Module) (types.Object, diag.Diagnostics) {
	conds, d := fcConditions(m.Conditions)
	if d.HasError() {
		return types.ObjectNull(fcModuleType.AttrTypes), d
	}
	return types.ObjectValue(fcModuleType.AttrTypes, map[string]attr.Value{"enabled": types.BoolValue(m.Enabled), "conditions": conds})
}

// Read finds the ForeignCluster and reports its status.
func (d *foreignClusterDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	cfg, ok := modelOf[foreignClusterModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	if d.deferred(req, resp, cfg.Cluster) {
		return
	}
	c, err := d.client(ctx, cfg.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError("Reading foreign cluster", err.Error())
		return
	}
	id := cfg.ClusterID.ValueString()
	fc, err := findForeignCluster(ctx, c, id)
	if err != nil {
		resp.Diagnostics.AddError("Reading foreign cluster", err.Error())
		return
	}
	cfg.Name = types.StringValue(fc.Name)
	cfg.Role = stringOrNull(string(fc.Status.Role))
	cfg.APIServerURL = stringOrNull(fc.Status.APIServerURL)
	cfg.LocalTenantNamespace = stringOrNull(fc.Status.TenantNamespace.Local)
	cfg.RemoteTenantNamespace = stringOrNull(fc.Status.TenantNamespace.Remote)
	var diags diag.Diagnostics
	cfg.Conditions, diags = fcConditions(fc.Status.Conditions)
	resp.Diagnostics.Append(diags...)
	cfg.Networking, diags = fcModule(fc.Status.Modules.Networking)
	resp.Diagnostics.Append(diags...)
	cfg.Authentication, diags = fcModule(fc.Status.Modules.Authentication)
	resp.Diagnostics.Append(diags...)
	cfg.Offloading, diags = fcModule(fc.Status.Modules.Offloading)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	latency, err := tunnelLatency(ctx, c, fc.Status.TenantNamespace.Local)
	if err != nil {
		resp.Diagnostics.AddError("Reading foreign cluster", err.Error())
		return
	}
	cfg.TunnelLatency = stringOrNull(latency)
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}

// tunnelLatency is the latency of the Connected Connection in a tenant namespace, or "" when
// there is none (no namespace, no tunnel, or not connected).
func tunnelLatency(ctx context.Context, c *clusterClient, namespace string) (string, error) {
	if namespace == "" {
		return "", nil
	}
	conns := &netv1beta1.ConnectionList{}
	if err := c.ctrl.List(ctx, conns, client.InNamespace(namespace)); err != nil {
		return "", fmt.Errorf("listing Connections in %s in %s: %w", namespace, c.describe(), err)
	}
	for _, conn := range conns.Items {
		if conn.Status.Value == netv1beta1.Connected && conn.Status.Latency.Value != "" {
			return conn.Status.Latency.Value, nil
		}
	}
	return "", nil
}

// findForeignCluster finds the ForeignCluster of a remote cluster ID: the one named after it,
// else the one whose spec.clusterID it is.
func findForeignCluster(ctx context.Context, c *clusterClient, id string) (*corev1beta1.ForeignCluster, error) {
	fc := &corev1beta1.ForeignCluster{}
	err := c.ctrl.Get(ctx, client.ObjectKey{Name: id}, fc)
	if err == nil && string(fc.Spec.ClusterID) == id {
		return fc, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading ForeignCluster %s in %s: %w", id, c.describe(), err)
	}
	list := &corev1beta1.ForeignClusterList{}
	if err := c.ctrl.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing ForeignClusters in %s: %w", c.describe(), err)
	}
	var found []corev1beta1.ForeignCluster
	for _, item := range list.Items {
		if string(item.Spec.ClusterID) == id {
			found = append(found, item)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%s has no ForeignCluster for cluster ID %q: it is not peered with that cluster, or its liqo "+
			"controllers have not recorded the peering yet; check the cluster ID (liqo_cluster.cluster_id of the remote cluster) "+
			"and that the peering's objects exist", c.describe(), id)
	case 1:
		return &found[0], nil
	}
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = f.Name
	}
	return nil, fmt.Errorf("%s has %d ForeignClusters for cluster ID %q (%v): delete the extra ones", c.describe(), len(found), id, names)
}
