package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

// offerAcceptModel is the `offer` of liqo_peering and liqo_resource_slice: the offer the
// resources are taken on, the ceiling of their cost, and the contract's duration.
type offerAcceptModel struct {
	Name           types.String `tfsdk:"name"`
	MaxCostPerHour types.String `tfsdk:"max_cost_per_hour"`
	Duration       types.String `tfsdk:"duration"`
}

// offerAcceptAttribute is the `offer` attribute; what covers names the resources it prices.
func offerAcceptAttribute(what string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Take " + what + " on an offer of the provider (seed 004's advertisement; `data.liqo_offers` " +
			"lists them): at apply the offer is read as the consumer, the cost per hour of the resources asked at its prices " +
			"is computed, and an offer costing more than `max_cost_per_hour` is refused before anything is written. Else a " +
			"`Contract` (`market.peerkit.io/v1alpha1`, named as the slice, in the consumer's tenant namespace) is written " +
			"with the terms (the offer, the amounts, the prices, start and end), the slice names it (annotation " +
			"`market.peerkit.io/contract`), and the apply waits until both clusters signed it (the consumer's controller " +
			"manager, then the provider's, which checks it against its offer): a refusal fails with the provider's reason. " +
			"The provider then grants the slice exactly the contract's resources. Changing `duration` or the resources " +
			"renews the contract in place (same start, new end and amounts, signed again); removing `offer` deletes the " +
			"contract; destroy deletes it with the slice. The accrued cost changes on its own: read it with " +
			"`data.liqo_contract`.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the offer, as `data.liqo_offers` lists it.",
				Validators: dnsSubdomain("must be the name of an offer (a DNS subdomain)")},
			"max_cost_per_hour": schema.StringAttribute{Required: true,
				MarkdownDescription: "Most the resources may cost per hour at the offer's prices, in the offer's currency: a " +
					"non-negative decimal such as `2.50`.",
				Validators: []validator.String{priceValidator()}},
			"duration": optionalString("How long the contract runs from its start, a duration such as `720h`; default the "+
				"offer's minimum duration, else `720h`.", authDurationValidator()),
		},
	}
}

// offerAccept maps an `offer` value to the peering library's Accept (nil when null).
func offerAccept(ctx context.Context, v types.Object) (*peering.Accept, error) {
	if v.IsNull() || v.IsUnknown() {
		return nil, nil //nolint:nilnil // no offer: nothing to accept
	}
	var m offerAcceptModel
	if d := v.As(ctx, &m, basetypes.ObjectAsOptions{}); d.HasError() {
		return nil, fmt.Errorf("reading offer: %w", diagsError(d))
	}
	a := &peering.Accept{Offer: m.Name.ValueString(), MaxCostPerHour: m.MaxCostPerHour.ValueString()}
	if !m.Duration.IsNull() && !m.Duration.IsUnknown() {
		d, err := time.ParseDuration(m.Duration.ValueString())
		if err != nil {
			return nil, fmt.Errorf("offer.duration: %q is not a duration such as 720h: %w", m.Duration.ValueString(), err)
		}
		a.Duration = d
	}
	return a, nil
}
