package provider

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// authBase64Validator checks that a string is standard base64 (with padding), the form in which
// the API returns []byte fields, so that what is read back equals what was written.
type authBase64Validator struct{}

// Description says what the base64 validator accepts.
func (authBase64Validator) Description(context.Context) string {
	return "must be standard base64 with padding (as `base64encode()` gives)"
}

// MarkdownDescription is Description.
func (v authBase64Validator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

// ValidateString checks one value.
func (authBase64Validator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := base64.StdEncoding.Strict().DecodeString(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid base64",
			fmt.Sprintf("the value is not standard base64 with padding: %v; encode the raw bytes with base64encode()", err))
	}
}

// authDurationValidator checks that a string is a non-negative Go duration such as 720h.
type authDurationValidator struct{}

// Description says what the duration validator accepts.
func (authDurationValidator) Description(context.Context) string {
	return "must be a duration such as 720h or 90m"
}

// MarkdownDescription is Description.
func (v authDurationValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

// ValidateString checks one value.
func (authDurationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%q is not a duration such as 720h or 90m: %v", req.ConfigValue.ValueString(), err))
		return
	}
	if d < 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration", fmt.Sprintf("%q is negative", req.ConfigValue.ValueString()))
	}
}

// authBytes decodes an optional base64 attribute (validated at plan time) into bytes.
func authBytes(v types.String) ([]byte, error) {
	if v.IsNull() || v.IsUnknown() || v.ValueString() == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(v.ValueString())
	if err != nil {
		return nil, fmt.Errorf("decoding base64: %w", err)
	}
	return b, nil
}

// authBase64OrNull encodes bytes as a base64 attribute, null when empty.
func authBase64OrNull(b []byte) types.String {
	if len(b) == 0 {
		return types.StringNull()
	}
	return types.StringValue(base64.StdEncoding.EncodeToString(b))
}

// authHTTPSURLPattern is an https:// URL with a host.
var authHTTPSURLPattern = regexp.MustCompile(`^https://[^/\s]+(/\S*)?$`)
