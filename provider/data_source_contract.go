package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

var (
	_ datasource.DataSource              = (*contractDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*contractDataSource)(nil)
)

// contractDataSource reads the consumer's copy of a Contract: what changes on its own (phase,
// accrued cost) and so stays out of liqo_peering's state.
type contractDataSource struct {
	offloadingDataSource
}

// contractDataSourceModel is liqo_contract's configuration and result.
type contractDataSourceModel struct {
	Cluster           types.String `tfsdk:"cluster"`
	ProviderClusterID types.String `tfsdk:"provider_cluster_id"`
	Name              types.String `tfsdk:"name"`
	Namespace         types.String `tfsdk:"namespace"`
	Phase             types.String `tfsdk:"phase"`
	Reason            types.String `tfsdk:"reason"`
	OfferName         types.String `tfsdk:"offer_name"`
	Currency          types.String `tfsdk:"currency"`
	Start             types.String `tfsdk:"start"`
	End               types.String `tfsdk:"end"`
	Resources         types.Map    `tfsdk:"resources"`
	Prices            types.Map    `tfsdk:"prices"`
	AccruedCost       types.String `tfsdk:"accrued_cost"`
	ResourceSeconds   types.Map    `tfsdk:"resource_seconds"`
	LastMetered       types.String `tfsdk:"last_metered"`
	ConsumerSigned    types.Bool   `tfsdk:"consumer_signed"`
	ProviderSigned    types.Bool   `tfsdk:"provider_signed"`
}

func newContractDataSource() datasource.DataSource { return &contractDataSource{} }

// Metadata names the data source liqo_contract.
func (d *contractDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_contract"
}

// Schema describes liqo_contract.
func (d *contractDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A contract (seed 004) of this (consumer) cluster with a provider, as the consumer's copy holds it: " +
			"the `Contract` (`market.peerkit.io/v1alpha1`) that `liqo_peering`'s or `liqo_resource_slice`'s `offer` wrote, " +
			"named as the slice, in the tenant namespace of the provider. Its phase, the provider's reason of a refusal and " +
			"what the provider metered (resource-seconds, the cost accrued so far, copied back from the provider) change on " +
			"their own: they are read here, not kept in the resources' state.",
		Attributes: map[string]schema.Attribute{
			"cluster": offloadingDataSourceClusterAttribute(),
			"provider_cluster_id": schema.StringAttribute{Required: true, MarkdownDescription: "Cluster ID of the provider.",
				Validators: []validator.String{clusterIDValidator()}},
			"name": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Name of the contract: the slice's (`liqo_peering`'s slice is named after the provider's " +
					"cluster ID); default `provider_cluster_id`.",
				Validators: dnsSubdomain("must be a Kubernetes object name (a DNS subdomain)")},
			"namespace": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Tenant namespace of the provider on this cluster; default `liqo-tenant-<provider_cluster_id>`.",
				Validators:          namespaceNameValidators()},
			"phase": dataSourceComputedString("`Pending` (not signed by both yet), `Signed`, `Refused` (see `reason`) or " +
				"`Expired` (its end passed: the slice is cordoned)."),
			"reason":     dataSourceComputedString("Why the provider refused the contract, naming the field and the fix."),
			"offer_name": dataSourceComputedString("Name of the offer accepted."),
			"currency":   dataSourceComputedString("ISO 4217 code of the prices' and costs' currency."),
			"start":      dataSourceComputedString("Start of the contract, RFC 3339."),
			"end":        dataSourceComputedString("End of the contract, RFC 3339."),
			"resources":  offersComputedQuantities("Resources contracted, by resource name, as quantities."),
			"prices": schema.MapNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Price of each contracted resource per unit and hour, by resource name.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"amount": dataSourceComputedString("Price of `per` of the resource for one hour, a decimal."),
					"per":    dataSourceComputedString("Amount of the resource the price is for; null: 1."),
				}},
			},
			"accrued_cost": dataSourceComputedString("Cost accrued so far, a decimal in `currency`, as the provider metered it; " +
				"null before the first metering."),
			"resource_seconds": schema.MapAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "What the consumer's offloaded pods requested so far, by resource name: amount × seconds, decimals."},
			"last_metered":    dataSourceComputedString("When the provider last metered the contract, RFC 3339."),
			"consumer_signed": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the consumer signed the terms."},
			"provider_signed": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the provider countersigned them."},
		},
	}
}

// Read reads the consumer's copy of the contract.
func (d *contractDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	cfg, ok := modelOf[contractDataSourceModel](ctx, req.Config, &resp.Diagnostics)
	if !ok || d.deferred(req, resp, cfg.Cluster) {
		return
	}
	c, err := d.client(ctx, cfg.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError("Reading a contract", err.Error())
		return
	}
	if !known(cfg.Namespace) {
		cfg.Namespace = types.StringValue(consts.TenantNamespace(cfg.ProviderClusterID.ValueString()))
	}
	if !known(cfg.Name) {
		cfg.Name = cfg.ProviderClusterID
	}
	key := client.ObjectKey{Namespace: cfg.Namespace.ValueString(), Name: cfg.Name.ValueString()}
	ct := &marketv1alpha1.Contract{}
	if err := c.ctrl.Get(ctx, key, ct); err != nil {
		resp.Diagnostics.AddError("Reading a contract", fmt.Sprintf("contract %s on %s: %v (liqo_peering's or liqo_resource_slice's "+
			"offer writes it)", key, c.describe(), err))
		return
	}
	if err := cfg.fill(ctx, ct); err != nil {
		resp.Diagnostics.AddError("Reading a contract", fmt.Sprintf("contract %s on %s: %v", key, c.describe(), err))
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}

// fill sets the read attributes from the contract.
func (m *contractDataSourceModel) fill(ctx context.Context, ct *marketv1alpha1.Contract) error {
	terms, st := &ct.Spec.Terms, &ct.Status
	m.Phase, m.Reason = stringOrNull(string(st.Phase)), stringOrNull(st.Reason)
	m.OfferName, m.Currency = types.StringValue(terms.OfferName), types.StringValue(string(terms.Currency))
	m.Start, m.End = types.StringValue(terms.Start.UTC().Format(time.RFC3339)), types.StringValue(terms.End.UTC().Format(time.RFC3339))
	m.AccruedCost, m.LastMetered = stringOrNull(string(st.AccruedCost)), types.StringNull()
	if st.LastMetered != nil {
		m.LastMetered = types.StringValue(st.LastMetered.UTC().Format(time.RFC3339))
	}
	m.ConsumerSigned, m.ProviderSigned = types.BoolValue(len(ct.Spec.ConsumerSignature) > 0), types.BoolValue(len(st.ProviderSignature) > 0)
	var err error
	if m.Resources, err = offerResourceListValue(ctx, types.MapNull(types.StringType), terms.Resources); err != nil {
		return fmt.Errorf("spec.terms.resources: %w", err)
	}
	prices := offerTerms{Prices: types.MapNull(offerPriceType)}
	if err := prices.refreshPrices(ctx, terms.Prices); err != nil {
		return fmt.Errorf("spec.terms.%w", err)
	}
	m.Prices = prices.Prices
	seconds := make(map[string]string, len(st.ResourceSeconds))
	for name, v := range st.ResourceSeconds {
		seconds[string(name)] = string(v)
	}
	v, d := types.MapValueFrom(ctx, types.StringType, seconds)
	if d.HasError() {
		return fmt.Errorf("status.resourceSeconds: %w", diagsError(d))
	}
	m.ResourceSeconds = v
	return nil
}
