package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
)

var (
	_ datasource.DataSource              = (*offersDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*offersDataSource)(nil)
)

// offersDataSource lists the offers a provider made to a consumer, read with the consumer's
// own identity.
type offersDataSource struct {
	offloadingDataSource
}

// offersDataSourceModel is liqo_offers' configuration and result.
type offersDataSourceModel struct {
	Cluster           types.String         `tfsdk:"cluster"`
	ProviderClusterID types.String         `tfsdk:"provider_cluster_id"`
	Namespace         types.String         `tfsdk:"namespace"`
	RemoteNamespace   types.String         `tfsdk:"remote_namespace"`
	Offers            []offersDataSourceOf `tfsdk:"offers"`
}

// offersDataSourceOf is one offer of liqo_offers: its name and terms.
type offersDataSourceOf struct {
	Name types.String `tfsdk:"name"`
	offerTerms
}

func newOffersDataSource() datasource.DataSource { return &offersDataSource{} }

// Metadata names the data source liqo_offers.
func (d *offersDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_offers"
}

// offersComputedQuantities is a read map of quantities by resource name.
func offersComputedQuantities(description string) schema.MapAttribute {
	return schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: description}
}

// Schema describes liqo_offers.
func (d *offersDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The offers a provider cluster made to this (consumer) cluster, seed 004's advertisement, so " +
			"that a plan shows the price before anything is granted. Read on the provider with the consumer's own " +
			"control-plane identity (the kubeconfig Secret of the provider in the consumer's tenant namespace, which " +
			"authentication writes): the `Offer`s (`market.peerkit.io/v1alpha1`) the provider's controller manager " +
			"published in the consumer's tenant namespace there, and nothing else. The consumer must have authenticated " +
			"with the provider (`liqo_peering`, or `liqo_identity`).",
		Attributes: map[string]schema.Attribute{
			"cluster": offloadingDataSourceClusterAttribute(),
			"provider_cluster_id": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Cluster ID of the provider whose offers to read.",
				Validators:          []validator.String{clusterIDValidator()},
			},
			"namespace": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Tenant namespace of the peering with the provider on this cluster, which holds the " +
					"identity; default: `liqo-tenant-<provider_cluster_id>`.",
				Validators: namespaceNameValidators(),
			},
			"remote_namespace": dataSourceComputedString("The consumer's tenant namespace on the provider, where the offers are."),
			"offers": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The offers, sorted by name.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":      dataSourceComputedString("Name of the offer."),
					"resources": offersComputedQuantities("Resources offered, by resource name, as quantities."),
					"currency":  dataSourceComputedString("ISO 4217 code of the prices' currency."),
					"prices": schema.MapNestedAttribute{
						Computed:            true,
						MarkdownDescription: "Price of each resource per unit and hour, by resource name; a resource without one is free.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"amount": dataSourceComputedString("Price of `per` of the resource for one hour, a decimal."),
							"per":    dataSourceComputedString("Amount of the resource the price is for; null: 1."),
						}},
					},
					"minimum":      offersComputedQuantities("Least amount of each resource a consumer may take."),
					"maximum":      offersComputedQuantities("Most of each resource a consumer may take; null: all offered."),
					"min_duration": dataSourceComputedString("Shortest time the resources may be taken for."),
					"max_duration": dataSourceComputedString("Longest time the resources may be taken for."),
				}},
			},
		},
	}
}

// Read lists the offers with the consumer's identity.
func (d *offersDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	cfg, ok := modelOf[offersDataSourceModel](ctx, req.Config, &resp.Diagnostics)
	if !ok || d.deferred(req, resp, cfg.Cluster) {
		return
	}
	c, err := d.client(ctx, cfg.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError("Reading offers", err.Error())
		return
	}
	if cfg.Namespace.IsNull() || cfg.Namespace.IsUnknown() {
		cfg.Namespace = types.StringValue(consts.TenantNamespace(cfg.ProviderClusterID.ValueString()))
	}
	pub, err := offers.ReadAsConsumer(ctx, c.ctrl, c.ctrl.Scheme(), cfg.Namespace.ValueString(), cfg.ProviderClusterID.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Reading offers", "on "+c.describe()+": "+err.Error())
		return
	}
	cfg.RemoteNamespace = types.StringValue(pub.Namespace)
	cfg.Offers = make([]offersDataSourceOf, 0, len(pub.Offers))
	for i := range pub.Offers {
		o := &pub.Offers[i]
		item := offersDataSourceOf{Name: types.StringValue(o.Name), offerTerms: offerTerms{
			Resources: types.MapNull(types.StringType), Minimum: types.MapNull(types.StringType),
			Maximum: types.MapNull(types.StringType), Prices: types.MapNull(offerPriceType),
			MinDuration: types.StringNull(), MaxDuration: types.StringNull(),
		}}
		if err := item.refresh(ctx, &o.Spec); err != nil {
			resp.Diagnostics.AddError("Reading offers", "offer "+pub.Namespace+"/"+o.Name+": "+err.Error())
			return
		}
		cfg.Offers = append(cfg.Offers, item)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}
