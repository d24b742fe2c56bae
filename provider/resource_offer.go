package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
)

var _ resource.ResourceWithValidateConfig = (*offerResource)(nil)

// offerResource manages an Offer on a provider cluster: seed 004's advertisement.
type offerResource struct {
	objectResource[offerModel, *offerModel, *marketv1alpha1.Offer]
}

// offerModel is liqo_offer's state.
type offerModel struct {
	namespacedObject
	offerTerms
	Consumers types.Set `tfsdk:"consumers"`
}

// offerPriceModel is one price: an amount per unit and hour.
type offerPriceModel struct {
	Amount types.String `tfsdk:"amount"`
	Per    types.String `tfsdk:"per"`
}

func newOfferResource() resource.Resource {
	r := &offerResource{}
	r.objectKind = objectKind[offerModel, *marketv1alpha1.Offer]{
		typeName: "_offer",
		kind:     "Offer", noun: "offer", needLiqo: true, namespaced: true, timeout: 2 * time.Minute,
		build: func(ctx context.Context, w objectWrite[offerModel], o *marketv1alpha1.Offer) error {
			spec, err := w.plan.spec(ctx)
			if err != nil {
				return err
			}
			forge.MutateOffer(o, spec)
			return nil
		},
		read: func(ctx context.Context, _ *clusterClient, state *offerModel, o *marketv1alpha1.Offer) error {
			return state.refresh(ctx, o)
		},
	}
	return r
}

// offerResourceNameValidators check the keys of a map of resources: resource names.
func offerResourceNameValidators() []validator.Map {
	return []validator.Map{mapvalidator.KeysAre(stringForm{"must be a resource name such as cpu or nvidia.com/gpu",
		"Invalid resource name", func(s string) string {
			if err := offers.ValidateResourceName(s); err != nil {
				return err.Error()
			}
			return ""
		}})}
}

// offerQuantities is a map of quantities by resource name.
func offerQuantities(required bool, description string) schema.MapAttribute {
	return schema.MapAttribute{
		Required: required, Optional: !required, ElementType: types.StringType, MarkdownDescription: description,
		Validators: append(offerResourceNameValidators(), mapvalidator.ValueStringsAre(quantityValidator())),
	}
}

// Schema describes liqo_offer.
func (r *offerResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/name", timeouts.Opts{Delete: true},
		"An offer of a provider cluster (seed 004's advertisement): an `Offer` (`market.peerkit.io/v1alpha1`, our own "+
			"group, which upstream Liqo ignores) in the provider's Liqo namespace, saying which resources it is willing "+
			"to share, at what price per unit and hour, within which bounds, and with which consumers. The provider's "+
			"controller manager publishes a copy in the tenant namespace of every consumer it is made to, where the "+
			"consumer reads it with its own identity (data source `liqo_offers`). Every attribute but `name`, "+
			"`namespace` and `cluster` changes in place.",
		map[string]schema.Attribute{
			"name": requiredReplaceString("Name of the Offer. Changing it replaces the offer.",
				dnsSubdomain("must be a DNS subdomain: lower-case letters, digits, '-' and '.'")...),
			"namespace": derivedDefaultString("Namespace of the Offer: the provider's Liqo namespace (default: the "+
				"cluster's `liqo_namespace`, `liqo`), where its controller manager reads offers. Changing it replaces the offer.",
				dnsLabelValidators()...),
			"resources": offerQuantities(true, "Resources offered, by resource name (`cpu`, `memory`, `pods`, "+
				"`ephemeral-storage`, `storage`, extended resources such as `nvidia.com/gpu`), as Kubernetes quantities."),
			"currency": optionalString("ISO 4217 code of the prices' currency, such as `EUR`; required with `prices`.",
				stringForm{"must be an ISO 4217 currency code such as EUR", "Unknown currency", func(s string) string {
					if err := offers.ValidateCurrency(s); err != nil {
						return err.Error()
					}
					return ""
				}}),
			"prices":       offerPricesAttribute(),
			"minimum":      offerQuantities(false, "Least amount of each resource a consumer may take under this offer."),
			"maximum":      offerQuantities(false, "Most of each resource a consumer may take under this offer (default: all it offers)."),
			"min_duration": optionalString("Shortest time a consumer may take the resources for, such as `1h`.", authDurationValidator()),
			"max_duration": optionalString("Longest time a consumer may take the resources for, such as `720h`.", authDurationValidator()),
			"consumers": schema.SetAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Cluster IDs of the consumers the offer is made to; not set or empty: every consumer. " +
					"Each consumer sees only itself in its copy.",
				Validators: []validator.Set{setvalidator.ValueStringsAre(clusterIDValidator())},
			},
		})
}

// priceValidator checks a price (or a ceiling of prices): a non-negative decimal such as 0.025
// (offers.ValidatePrice).
func priceValidator() validator.String {
	return stringForm{"must be a non-negative decimal such as 0.025", "Invalid price", func(s string) string {
		if err := offers.ValidatePrice(s); err != nil {
			return err.Error()
		}
		return ""
	}}
}

// offerPricesAttribute is `prices`: per resource, an amount per unit and hour.
func offerPricesAttribute() schema.MapNestedAttribute {
	return schema.MapNestedAttribute{
		Optional: true,
		MarkdownDescription: "Price of each offered resource per unit and hour, by resource name; a resource without one " +
			"is free of charge.",
		Validators: offerResourceNameValidators(),
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"amount": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Price of `per` of the resource for one hour: a non-negative decimal such as `0.025`.",
				Validators:          []validator.String{priceValidator()},
			},
			"per": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Amount of the resource the price is for, a quantity such as `1Gi`; default `1`.",
				Validators:          []validator.String{quantityValidator()},
			},
		}},
	}
}

// ValidateConfig checks the whole offer as the controllers would (offers.Validate): prices
// and bounds of resources not offered, a minimum above a maximum, prices without a currency.
func (r *offerResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m offerModel
	if resp.Diagnostics.Append(req.Config.Get(ctx, &m)...); resp.Diagnostics.HasError() || !m.known() {
		return
	}
	spec, err := m.spec(ctx)
	if err == nil {
		err = offers.Validate(spec)
	}
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("resources"), "Invalid offer", err.Error())
	}
}

// ModifyPlan shows the default namespace, the cluster's Liqo namespace, in the plan.
func (r *offerResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	plan, ok := plannedModel[offerModel](ctx, &r.clusterResource, req, resp)
	if !ok || !plan.Namespace.IsUnknown() || plan.Cluster.IsUnknown() {
		return
	}
	if e, err := r.clusters.lookup(plan.Cluster.ValueString()); err == nil {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("namespace"), e.liqoNS)...)
	}
}

// spec builds the Offer's spec from the model; an error names the attribute.
func (m *offerModel) spec(ctx context.Context) (*marketv1alpha1.OfferSpec, error) {
	spec, err := m.offerTerms.spec(ctx)
	if err != nil {
		return nil, err
	}
	if !m.Consumers.IsNull() && !m.Consumers.IsUnknown() {
		if d := m.Consumers.ElementsAs(ctx, &spec.Consumers, false); d.HasError() {
			return nil, fmt.Errorf("reading consumers: %w", diagsError(d))
		}
	}
	return spec, nil
}

// refresh sets the model from the Offer, keeping the configured spelling of equal values.
func (m *offerModel) refresh(ctx context.Context, o *marketv1alpha1.Offer) error {
	if err := m.offerTerms.refresh(ctx, &o.Spec); err != nil {
		return fmt.Errorf("reading Offer %s/%s: %w", o.Namespace, o.Name, err)
	}
	m.Consumers = types.SetNull(types.StringType)
	if len(o.Spec.Consumers) > 0 {
		v, d := types.SetValueFrom(ctx, types.StringType, o.Spec.Consumers)
		if d.HasError() {
			return fmt.Errorf("reading the consumers of Offer %s/%s: %w", o.Namespace, o.Name, diagsError(d))
		}
		m.Consumers = v
	}
	return nil
}

// offerDuration parses a duration attribute (nil when not set).
func offerDuration(attr string, v types.String) (*metav1.Duration, error) {
	if v.IsNull() || v.IsUnknown() {
		return nil, nil
	}
	d, err := time.ParseDuration(v.ValueString())
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a duration such as 720h: %w", attr, v.ValueString(), err)
	}
	return &metav1.Duration{Duration: d}, nil
}

// offerDurationString renders a duration, keeping the prior spelling when equal.
func offerDurationString(prior types.String, d *metav1.Duration) types.String {
	if d == nil {
		return types.StringNull()
	}
	if !prior.IsNull() && !prior.IsUnknown() {
		if pd, err := time.ParseDuration(prior.ValueString()); err == nil && pd == d.Duration {
			return prior
		}
	}
	return types.StringValue(d.Duration.String())
}

// offerResourceList parses a map of quantities (nil when not set); an error names the attribute.
func offerResourceList(ctx context.Context, attr string, v types.Map) (corev1.ResourceList, error) {
	if v.IsNull() || v.IsUnknown() {
		return nil, nil
	}
	raw := map[string]string{}
	if d := v.ElementsAs(ctx, &raw, false); d.HasError() {
		return nil, fmt.Errorf("reading %s: %w", attr, diagsError(d))
	}
	out := corev1.ResourceList{}
	for name, s := range raw {
		q, err := kresource.ParseQuantity(s)
		if err != nil {
			return nil, fmt.Errorf("%s[%q]: %q is not a Kubernetes quantity such as 4, 500m or 8Gi", attr, name, s)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// offerResourceListValue renders a resource list, keeping the prior spelling of equal
// quantities; null when empty.
func offerResourceListValue(ctx context.Context, prior types.Map, l corev1.ResourceList) (types.Map, error) {
	if len(l) == 0 {
		return types.MapNull(types.StringType), nil
	}
	before := map[string]types.String{}
	if !prior.IsNull() && !prior.IsUnknown() {
		if d := prior.ElementsAs(ctx, &before, false); d.HasError() {
			return types.MapNull(types.StringType), diagsError(d)
		}
	}
	out := map[string]types.String{}
	for name, q := range l {
		p, ok := before[string(name)]
		if !ok {
			p = types.StringNull()
		}
		out[string(name)] = offloadingQuantityString(p, q)
	}
	v, d := types.MapValueFrom(ctx, types.StringType, out)
	return v, diagsError(d)
}
