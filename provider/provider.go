// Package provider implements the liqo Terraform provider: resources, data sources and
// functions that declare peerings between Kubernetes clusters.
package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Address is the provider's registry address.
const Address = "registry.terraform.io/peerkit/liqo"

// liqoProvider is the provider.
type liqoProvider struct {
	version string
}

var (
	_ provider.Provider                       = (*liqoProvider)(nil)
	_ provider.ProviderWithValidateConfig     = (*liqoProvider)(nil)
	_ provider.ProviderWithEphemeralResources = (*liqoProvider)(nil)
	_ provider.ProviderWithFunctions          = (*liqoProvider)(nil)
	_ provider.ProviderWithActions            = (*liqoProvider)(nil)
	_ provider.ProviderWithListResources      = (*liqoProvider)(nil)
)

// providerModel is the provider block: its own connection and a map of named ones.
type providerModel struct {
	connectionModel
	Clusters types.Map `tfsdk:"clusters"`
}

// New returns a constructor of the provider, reporting version.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &liqoProvider{version: version} }
}

// Metadata names the provider "liqo": its resources are liqo_*.
func (p *liqoProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "liqo"
	resp.Version = p.version
}

// Schema describes the provider block.
func (p *liqoProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	attrs := connectionAttributes()
	attrs["clusters"] = schema.MapNestedAttribute{
		Optional: true,
		MarkdownDescription: "Several clusters in one provider block, by name: each value takes the same connection " +
			"attributes as the provider block. Resources select one with `cluster`; `liqo_peering` with " +
			"`consumer_cluster` and `provider_cluster`. Build the map with a `for` expression to serve a fleet.",
		NestedObject: schema.NestedAttributeObject{Attributes: connectionAttributes()},
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Declares peerings between Kubernetes clusters (Liqo v1 API): tenant namespaces, " +
			"network configuration, WireGuard gateways, authentication and resource slices. The connection " +
			"attributes are those of the hashicorp/kubernetes provider; nothing is read from the environment and " +
			"there is no fallback to localhost or in-cluster configuration.",
		Attributes: attrs,
	}
}

// ValidateConfig reports contradictory connection attributes at validate and plan time.
func (p *liqoProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	cfg, ok := modelOf[providerModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	for _, c := range cfg.conflicts() {
		resp.Diagnostics.AddError("Conflicting connection attributes in the liqo provider block", c)
	}
	if cfg.Clusters.IsNull() || cfg.Clusters.IsUnknown() {
		return
	}
	named, diags := clusterMap(ctx, cfg.Clusters)
	resp.Diagnostics.Append(diags...)
	for name, conn := range named {
		for _, c := range conn.conflicts() {
			resp.Diagnostics.AddAttributeError(path.Root("clusters").AtMapKey(name),
				fmt.Sprintf("Conflicting connection attributes for cluster %q", name), c)
		}
	}
}

// clusterMap decodes the clusters map.
func clusterMap(ctx context.Context, m types.Map) (map[string]connectionModel, diag.Diagnostics) {
	out := map[string]connectionModel{}
	if m.IsNull() || m.IsUnknown() {
		return out, nil
	}
	diags := m.ElementsAs(ctx, &out, false)
	return out, diags
}

// Configure makes the set of clusters the resources use. A connection that is not known yet
// (a cluster created in the same apply) is kept as is: planning works with unknown values, and
// an operation that needs that cluster says so.
func (p *liqoProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	cfg, ok := modelOf[providerModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	named := map[string]connectionModel{}
	if !cfg.Clusters.IsUnknown() {
		var diags diag.Diagnostics
		named, diags = clusterMap(ctx, cfg.Clusters)
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	set, err := newClusterSet(cfg.connectionModel, named)
	if err != nil {
		resp.Diagnostics.AddError("Configuring the liqo provider", err.Error())
		return
	}
	set.unknownMap = cfg.Clusters.IsUnknown()
	resp.ResourceData = set
	resp.DataSourceData = set
	resp.EphemeralResourceData = set
	resp.ActionData = set
	resp.ListResourceData = set
}

// Resources lists the provider's resources, by module.
func (p *liqoProvider) Resources(_ context.Context) []func() resource.Resource {
	out := []func() resource.Resource{newTenantNamespaceResource}
	out = append(out, networkingResources()...)
	out = append(out, authenticationResources()...)
	out = append(out, offloadingResources()...)
	return append(out, marketResources()...)
}

// DataSources lists the provider's data sources.
func (p *liqoProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return append(append(offloadingDataSources(), marketDataSources()...), newDNSDiscoveryDataSource, newLANDiscoveryDataSource)
}

// EphemeralResources lists the provider's ephemeral resources.
func (p *liqoProvider) EphemeralResources(_ context.Context) []func() ephemeral.EphemeralResource {
	return networkingEphemeralResources()
}

// ListResources lists the provider's list resources (`terraform query`).
func (p *liqoProvider) ListResources(_ context.Context) []func() list.ListResource {
	return listResources()
}

// Functions lists the provider's functions.
func (p *liqoProvider) Functions(_ context.Context) []func() function.Function {
	return networkingFunctions()
}

// Actions lists the provider's actions.
func (p *liqoProvider) Actions(_ context.Context) []func() action.Action {
	return providerActions()
}
