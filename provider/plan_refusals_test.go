package provider_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestAccNoRoomForPods: a pods quantity below one pod (a Ready virtual node that runs nothing)
// is refused at plan on every resource that asks for pods, naming the attribute and the fix; a
// slice that names no pods (the provider's default) plans.
func TestAccNoRoomForPods(t *testing.T) {
	slice := func(body string) string {
		return providerBlock() + fmt.Sprintf(`
resource "liqo_resource_slice" "s" {
  cluster             = "consumer"
  name                = "pods"
  provider_cluster_id = "cl-pods"
  cpu                 = "1"
  %s
}
`, body)
	}
	peering := func(pods string) string {
		return providerBlock() + fmt.Sprintf(`
resource "liqo_peering" "p" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  networking       = false
  cpu              = "1"
  memory           = "1Gi"
  pods             = %q
}
`, pods)
	}
	steps := []resource.TestStep{
		{Config: slice(`pods = "0"`), PlanOnly: true, ExpectError: offWrappedText(`No room for any pod`,
			`pods = "0" gives a virtual node with room for no pod`, `leave pods out for the provider's default`)},
		{Config: slice(`pods = "500m"`), PlanOnly: true, ExpectError: offWrappedText(`pods = "500m" gives a virtual node with room for no pod`)},
		{Config: peering("0"), PlanOnly: true, ExpectError: offWrappedText(`No room for any pod`,
			`pods = "0" gives a virtual node with room for no pod`, `Ask for at least 1, e.g. pods = "110"`)},
		{Config: slice(""), PlanOnly: true, ExpectNonEmptyPlan: true},
		{Config: slice(`pods = "1"`), PlanOnly: true, ExpectNonEmptyPlan: true},
	}
	for i, s := range steps {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, Steps: []resource.TestStep{s}})
		})
	}
}

// TestAccNetworkConfigurationOverlappingCIDRs: remote CIDRs of one Configuration that overlap
// one another (which the controllers would remap apart, silently) are refused at plan, naming
// both CIDRs and their attributes; disjoint ones plan.
func TestAccNetworkConfigurationOverlappingCIDRs(t *testing.T) {
	for _, tc := range []struct {
		body string
		want *regexp.Regexp
	}{
		{`remote_pod_cidrs = ["10.243.0.0/16", "10.243.4.0/24"]`,
			offWrappedText(`Overlapping remote CIDRs`, `remote_pod_cidrs 10.243.0.0/16 overlaps remote_pod_cidrs 10.243.4.0/24`)},
		{"remote_pod_cidrs = [\"10.70.0.0/24\"]\n  remote_external_cidrs = [\"10.70.0.0/16\"]",
			offWrappedText(`Overlapping remote CIDRs`,
				`remote_pod_cidrs 10.70.0.0/24 overlaps remote_external_cidrs 10.70.0.0/16`)},
		{"remote_pod_cidrs = [\"10.243.0.0/16\"]\n  remote_external_cidrs = [\"10.70.0.0/16\", \"10.70.128.0/17\"]",
			offWrappedText(`remote_external_cidrs 10.70.0.0/16 overlaps remote_external_cidrs 10.70.128.0/17`)},
		{"remote_pod_cidrs = [\"10.243.0.0/16\", \"10.244.0.0/16\"]\n  remote_external_cidrs = [\"10.70.0.0/16\"]", nil},
	} {
		step := resource.TestStep{Config: networkConfigurationConfig("liqo-tenant-cl-overlap", "cl-overlap", tc.body), PlanOnly: true,
			ExpectError: tc.want, ExpectNonEmptyPlan: tc.want == nil}
		resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: protoV6Providers, Steps: []resource.TestStep{step}})
	}
}
