package provider

import (
	"encoding/base64"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

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
