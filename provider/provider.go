// Package provider implements the liqo Terraform provider: resources, data sources and
// functions that declare peerings between Kubernetes clusters.
package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// Address is the provider's registry address.
const Address = "registry.terraform.io/peerkit/liqo"

// liqoProvider is the provider. Its connection settings and resources come in their own change.
type liqoProvider struct {
	version string
}

var _ provider.Provider = (*liqoProvider)(nil)

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
	resp.Schema = schema.Schema{
		MarkdownDescription: "Declares peerings between Kubernetes clusters (Liqo v1 API): tenant namespaces, " +
			"network configuration, WireGuard gateways, authentication and resource slices.",
	}
}

// Configure prepares the provider's clients.
func (p *liqoProvider) Configure(_ context.Context, _ provider.ConfigureRequest, _ *provider.ConfigureResponse) {
}

// Resources lists the provider's resources.
func (p *liqoProvider) Resources(_ context.Context) []func() resource.Resource {
	return nil
}

// DataSources lists the provider's data sources.
func (p *liqoProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return nil
}
