package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
)

// offerTerms are the terms of an offer, as liqo_offer configures them and liqo_offers lists
// them: resources, currency, prices, bounds.
type offerTerms struct {
	Resources   types.Map    `tfsdk:"resources"`
	Currency    types.String `tfsdk:"currency"`
	Prices      types.Map    `tfsdk:"prices"`
	Minimum     types.Map    `tfsdk:"minimum"`
	Maximum     types.Map    `tfsdk:"maximum"`
	MinDuration types.String `tfsdk:"min_duration"`
	MaxDuration types.String `tfsdk:"max_duration"`
}

// offerPriceType is the type of one element of `prices`.
var offerPriceType = types.ObjectType{AttrTypes: map[string]attr.Type{"amount": types.StringType, "per": types.StringType}}

// known tells whether every term is known, to the last price (as ValidateConfig needs to check
// them together).
func (t *offerTerms) known() bool {
	for _, v := range []attr.Value{t.Resources, t.Currency, t.Prices, t.Minimum, t.Maximum, t.MinDuration, t.MaxDuration} {
		if !fullyKnown(v) {
			return false
		}
	}
	return true
}

// fullyKnown tells whether a value and, in a map or an object, every value in it is known.
func fullyKnown(v attr.Value) bool {
	if v.IsUnknown() {
		return false
	}
	var inner map[string]attr.Value
	switch x := v.(type) {
	case types.Map:
		inner = x.Elements()
	case types.Object:
		inner = x.Attributes()
	}
	for _, e := range inner {
		if !fullyKnown(e) {
			return false
		}
	}
	return true
}

// spec builds an Offer's spec from the terms; an error names the attribute.
func (t *offerTerms) spec(ctx context.Context) (*marketv1alpha1.OfferSpec, error) {
	spec := &marketv1alpha1.OfferSpec{Currency: t.Currency.ValueString()}
	var err error
	if spec.Resources, err = offerResourceList(ctx, "resources", t.Resources); err != nil {
		return nil, err
	}
	if spec.Minimum, err = offerResourceList(ctx, "minimum", t.Minimum); err != nil {
		return nil, err
	}
	if spec.Maximum, err = offerResourceList(ctx, "maximum", t.Maximum); err != nil {
		return nil, err
	}
	if spec.MinDuration, err = offerDuration("min_duration", t.MinDuration); err != nil {
		return nil, err
	}
	if spec.MaxDuration, err = offerDuration("max_duration", t.MaxDuration); err != nil {
		return nil, err
	}
	if t.Prices.IsNull() || t.Prices.IsUnknown() {
		return spec, nil
	}
	prices := map[string]offerPriceModel{}
	if d := t.Prices.ElementsAs(ctx, &prices, false); d.HasError() {
		return nil, fmt.Errorf("reading prices: %w", diagsError(d))
	}
	spec.Prices = map[corev1.ResourceName]marketv1alpha1.Price{}
	for name, p := range prices {
		price := marketv1alpha1.Price{Amount: p.Amount.ValueString()}
		if !p.Per.IsNull() && !p.Per.IsUnknown() {
			q, err := kresource.ParseQuantity(p.Per.ValueString())
			if err != nil {
				return nil, fmt.Errorf("prices[%q].per: %q is not a Kubernetes quantity such as 1 or 1Gi", name, p.Per.ValueString())
			}
			price.Per = &q
		}
		spec.Prices[corev1.ResourceName(name)] = price
	}
	return spec, nil
}

// refresh sets the terms from an Offer's spec, keeping the prior spelling of equal values.
func (t *offerTerms) refresh(ctx context.Context, spec *marketv1alpha1.OfferSpec) error {
	var err error
	if t.Resources, err = offerResourceListValue(ctx, t.Resources, spec.Resources); err != nil {
		return fmt.Errorf("resources: %w", err)
	}
	if t.Minimum, err = offerResourceListValue(ctx, t.Minimum, spec.Minimum); err != nil {
		return fmt.Errorf("minimum: %w", err)
	}
	if t.Maximum, err = offerResourceListValue(ctx, t.Maximum, spec.Maximum); err != nil {
		return fmt.Errorf("maximum: %w", err)
	}
	t.Currency = stringOrNull(spec.Currency)
	t.MinDuration = offerDurationString(t.MinDuration, spec.MinDuration)
	t.MaxDuration = offerDurationString(t.MaxDuration, spec.MaxDuration)
	return t.refreshPrices(ctx, spec.Prices)
}

// refreshPrices sets `prices`, keeping the prior spelling of an equal `per`; null when none.
func (t *offerTerms) refreshPrices(ctx context.Context, prices map[corev1.ResourceName]marketv1alpha1.Price) error {
	before := map[string]offerPriceModel{}
	if !t.Prices.IsNull() && !t.Prices.IsUnknown() {
		if d := t.Prices.ElementsAs(ctx, &before, false); d.HasError() {
			return fmt.Errorf("prices: %w", diagsError(d))
		}
	}
	if len(prices) == 0 {
		t.Prices = types.MapNull(offerPriceType)
		return nil
	}
	out := map[string]offerPriceModel{}
	for name, p := range prices {
		m := offerPriceModel{Amount: types.StringValue(p.Amount), Per: types.StringNull()}
		if p.Per != nil {
			prior := types.StringNull()
			if b, ok := before[string(name)]; ok {
				prior = b.Per
			}
			m.Per = offloadingQuantityString(prior, *p.Per)
		}
		out[string(name)] = m
	}
	v, d := types.MapValueFrom(ctx, offerPriceType, out)
	if d.HasError() {
		return fmt.Errorf("prices: %w", diagsError(d))
	}
	t.Prices = v
	return nil
}
