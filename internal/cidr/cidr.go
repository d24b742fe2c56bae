// Package cidr converts between CIDRs as strings (what users, flags and Terraform write) and the
// networking API's CIDR type, in one place for the provider, liqo_peering and the controllers.
package cidr

import netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"

// FromStrings converts strings to the API's CIDRs, in order; nil for none.
func FromStrings(in []string) []netv1beta1.CIDR {
	if len(in) == 0 {
		return nil
	}
	out := make([]netv1beta1.CIDR, 0, len(in))
	for _, s := range in {
		out = append(out, netv1beta1.CIDR(s))
	}
	return out
}

// Strings converts the API's CIDRs to strings, in order; an empty (not nil) slice for none.
func Strings(in []netv1beta1.CIDR) []string {
	out := make([]string, 0, len(in))
	for _, c := range in {
		out = append(out, string(c))
	}
	return out
}
