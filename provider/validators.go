package provider

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/api/resource"
)

// dnsLabelPattern is a DNS-1123 label: the form of namespace names, and of cluster IDs as the
// API requires them.
var dnsLabelPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// dnsSubdomainPattern is a DNS-1123 subdomain, the form of most object names.
var dnsSubdomainPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// dnsLabelValidators check a DNS label (names the API derives from cluster IDs, namespaces).
func dnsLabelValidators() []validator.String { return dnsLabel("must be a DNS label") }

// namespaceNameValidators check a namespace name: a DNS label.
func namespaceNameValidators() []validator.String {
	return dnsLabel("must be a DNS label (a namespace name)")
}

// dnsLabel checks a DNS label: at most 63 characters of the form dnsLabelPattern; message is
// the error for a value of another form.
func dnsLabel(message string) []validator.String {
	return []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dnsLabelPattern, message)}
}

// dnsSubdomain checks a DNS subdomain: at most 253 characters of the form dnsSubdomainPattern;
// message is the error for a value of another form.
func dnsSubdomain(message string) []validator.String {
	return []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(dnsSubdomainPattern, message)}
}

// clusterIDValidator checks a cluster ID at plan time.
func clusterIDValidator() validator.String {
	return stringvalidator.All(dnsLabel("must be a DNS label: lower-case letters, digits and '-', " +
		"starting and ending with a letter or digit (e.g. cl-provider)")...)
}

// nwNameValidator checks an object name (DNS-1123 subdomain).
func nwNameValidator() validator.String {
	return stringvalidator.All(dnsSubdomain("must be a DNS subdomain: lower-case letters, digits, '-' and '.', " +
		"starting and ending with a letter or digit")...)
}

// nwPortValidator checks a port number.
func nwPortValidator() validator.Int64 { return int64validator.Between(1, 65535) }

// nwMTUValidator checks the MTU of a tunnel interface.
func nwMTUValidator() validator.Int64 { return int64validator.Between(576, 65535) }

// stringForm is a plan-time validator of a string's form, for the checks the framework's
// validators do not make. A null or unknown value passes; check returns "" for a value of the
// right form, else the detail of an error whose summary is summary.
type stringForm struct {
	description string // what it accepts: "must be ..."
	summary     string // e.g. "Invalid CIDR"
	check       func(value string) (detail string)
}

// Description says what the validator accepts.
func (v stringForm) Description(context.Context) string { return v.description }

// MarkdownDescription is Description.
func (v stringForm) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

// ValidateString checks one value.
func (v stringForm) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if detail := v.check(req.ConfigValue.ValueString()); detail != "" {
		resp.Diagnostics.AddAttributeError(req.Path, v.summary, detail)
	}
}

// cidrValidator checks that a string is an IP prefix in canonical form, like 10.0.0.0/16.
func cidrValidator() validator.String {
	return stringForm{"must be a CIDR such as 10.244.0.0/16", "Invalid CIDR", func(s string) string {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Sprintf("%q is not a CIDR such as 10.244.0.0/16: %v", s, err)
		}
		if p.Masked() != p {
			return fmt.Sprintf("%q has host bits set: the network is %s", s, p.Masked())
		}
		return ""
	}}
}

// nwIPValidator checks that a string is an IP address.
func nwIPValidator() validator.String {
	return stringForm{"must be an IP address such as 203.0.113.10", "Invalid IP address", func(s string) string {
		if _, err := netip.ParseAddr(s); err != nil {
			return fmt.Sprintf("%q is not an IP address such as 203.0.113.10: %v", s, err)
		}
		return ""
	}}
}

// nwHostValidator checks that a string is an IP address or a DNS name (a host to dial).
func nwHostValidator() validator.String {
	return stringForm{"must be an IP address such as 203.0.113.10 or a DNS name such as gw.example.com", "Invalid address",
		func(s string) string {
			if _, err := netip.ParseAddr(s); err == nil || (len(s) <= 253 && dnsSubdomainPattern.MatchString(s)) {
				return ""
			}
			return fmt.Sprintf("%q is neither an IP address such as 203.0.113.10 nor a DNS name such as gw.example.com "+
				"(lower-case letters, digits, '-' and '.')", s)
		}}
}

// nwWGKeyValidator checks that a string is a WireGuard key: 32 bytes in base64. The message
// never repeats the value: it may be a private key.
func nwWGKeyValidator() validator.String {
	const form = "must be a WireGuard key: 32 bytes in standard base64 (44 characters, as `wg genkey` or `wg pubkey` print)"
	return stringForm{form, "Invalid WireGuard key", func(s string) string {
		if _, err := nwParseWGKey(s); err != nil {
			return fmt.Sprintf("the value is not a WireGuard key: %v; generate one with `wg genkey` or the "+
				"liqo_wireguard_keypair ephemeral resource", err)
		}
		return ""
	}}
}

// quantityValidator checks that a string is a Kubernetes resource quantity, like 4, 500m or 8Gi.
func quantityValidator() validator.String {
	return stringForm{"must be a Kubernetes quantity such as 4, 500m or 8Gi", "Invalid quantity", func(s string) string {
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return fmt.Sprintf("%q is not a Kubernetes quantity such as 4, 500m or 8Gi", s)
		}
		if q.Sign() < 0 {
			return fmt.Sprintf("%q is negative", s)
		}
		return ""
	}}
}

// podsValidator checks that a pods quantity gives room for at least one pod: a virtual node of
// "0" (or of a fraction of a pod) is Ready but can run nothing. fix says what to write instead
// on the resource at hand.
func podsValidator(fix string) validator.String {
	return stringForm{"must be at least 1 (a whole number of pods)", "No room for any pod", func(s string) string {
		q, err := resource.ParseQuantity(s)
		if err != nil || q.Sign() < 0 {
			return "" // quantityValidator reports it
		}
		if q.Cmp(resource.MustParse("1")) < 0 {
			return fmt.Sprintf("pods = %q gives a virtual node with room for no pod: it would be Ready but run nothing "+
				"offloaded to it. %s", s, fix)
		}
		return ""
	}}
}

// authBase64Validator checks that a string is standard base64 (with padding), the form in which
// the API returns []byte fields, so that what is read back equals what was written.
func authBase64Validator() validator.String {
	return stringForm{"must be standard base64 with padding (as `base64encode()` gives)", "Invalid base64", func(s string) string {
		if _, err := base64.StdEncoding.Strict().DecodeString(s); err != nil {
			return fmt.Sprintf("the value is not standard base64 with padding: %v; encode the raw bytes with base64encode()", err)
		}
		return ""
	}}
}

// proxyURLValidator checks that a string is an http or https URL with a host, as kubeconfigs'
// proxy-url are (e.g. http://10.71.0.1:8118).
func proxyURLValidator() validator.String {
	return stringForm{"must be an http(s) URL such as http://10.71.0.1:8118", "Invalid proxy URL", func(s string) string {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Sprintf("%q is not an http(s) URL with a host, such as http://10.71.0.1:8118", s)
		}
		return ""
	}}
}

// authDurationValidator checks that a string is a non-negative Go duration such as 720h.
func authDurationValidator() validator.String {
	return stringForm{"must be a duration such as 720h or 90m", "Invalid duration", func(s string) string {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Sprintf("%q is not a duration such as 720h or 90m: %v", s, err)
		}
		if d < 0 {
			return fmt.Sprintf("%q is negative", s)
		}
		return ""
	}}
}
