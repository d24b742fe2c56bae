package provider

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/api/resource"
)

// clusterIDPattern is a DNS label, as the API requires of cluster IDs.
var clusterIDPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// clusterIDValidator checks a cluster ID at plan time.
func clusterIDValidator() validator.String {
	return stringvalidator.All(
		stringvalidator.LengthBetween(1, 63),
		stringvalidator.RegexMatches(clusterIDPattern, "must be a DNS label: lower-case letters, digits and '-', "+
			"starting and ending with a letter or digit (e.g. cl-provider)"),
	)
}

// cidrValidator checks that a string is an IP prefix in canonical form, like 10.0.0.0/16.
type cidrValidator struct{}

// Description says what the CIDR validator accepts.
func (cidrValidator) Description(context.Context) string {
	return "must be a CIDR such as 10.244.0.0/16"
}

// MarkdownDescription is Description.
func (v cidrValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

// ValidateString checks one value.
func (cidrValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid CIDR", fmt.Sprintf("%q is not a CIDR such as 10.244.0.0/16: %v", s, err))
		return
	}
	if p.Masked() != p {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid CIDR",
			fmt.Sprintf("%q has host bits set: the network is %s", s, p.Masked()))
	}
}

// quantityValidator checks that a string is a Kubernetes resource quantity, like 4, 500m or 8Gi.
type quantityValidator struct{}

// Description says what the quantity validator accepts.
func (quantityValidator) Description(context.Context) string {
	return "must be a Kubernetes quantity such as 4, 500m or 8Gi"
}

// MarkdownDescription is Description.
func (v quantityValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

// ValidateString checks one value.
func (quantityValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	q, err := resource.ParseQuantity(req.ConfigValue.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid quantity",
			fmt.Sprintf("%q is not a Kubernetes quantity such as 4, 500m or 8Gi", req.ConfigValue.ValueString()))
		return
	}
	if q.Sign() < 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid quantity", fmt.Sprintf("%q is negative", req.ConfigValue.ValueString()))
	}
}
