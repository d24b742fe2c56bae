package sandbox

import (
	"net/netip"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestClusterPlanOfSixteen: the 16 clusters of the largest sandbox have distinct names, pod
// CIDRs, node CIDRs inside their cluster's, external CIDRs and gateway host addresses, and
// every pair of them a tunnel network of its own, the same from both ends.
func TestClusterPlanOfSixteen(t *testing.T) {
	opts := clusters(MaxClusters)
	if len(opts) != MaxClusters || len(ClusterNames) != MaxClusters {
		t.Fatalf("%d clusters, %d names: want %d", len(opts), len(ClusterNames), MaxClusters)
	}
	if want := []string{"consumer", "provider", "provider-2", "provider-15"}; opts[0].Name != want[0] || opts[1].Name != want[1] ||
		opts[2].Name != want[2] || opts[15].Name != want[3] {
		t.Errorf("names %s, %s, %s ... %s: want %v", opts[0].Name, opts[1].Name, opts[2].Name, opts[15].Name, want)
	}
	seen := map[string]string{}
	distinct := func(what, v, of string) {
		t.Helper()
		if v == "" {
			t.Errorf("%s of %s is empty", what, of)
		}
		if other, ok := seen[v]; ok {
			t.Errorf("%s %s of %s is %s's too", what, v, of, other)
		}
		seen[v] = of
	}
	// The networks every cluster has: the internal CIDR (the controller manager's default) and
	// the Service CIDR.
	shared := []netip.Prefix{netip.MustParsePrefix(consts.DefaultInternalCIDR), netip.MustParsePrefix(testenv.ServiceCIDR)}
	for _, o := range opts {
		for _, p := range shared {
			for what, cidr := range map[string]string{"pod CIDR": o.PodCIDR, "external CIDR": externalCIDR(o.Name)} {
				if netip.MustParsePrefix(cidr).Overlaps(p) {
					t.Errorf("the %s %s of %s overlaps %s", what, cidr, o.Name, p)
				}
			}
		}
		distinct("name", o.Name, o.Name)
		distinct("pod CIDR", o.PodCIDR, o.Name)
		distinct("external CIDR", externalCIDR(o.Name), o.Name)
		distinct("host address", HostAddress(o.Name), o.Name)
		pod := netip.MustParsePrefix(o.PodCIDR)
		for _, n := range o.Nodes {
			distinct("node name", n.Name, o.Name)
			if node := netip.MustParsePrefix(n.PodCIDR); !pod.Contains(node.Addr()) || node.Bits() != 24 {
				t.Errorf("node %s's pod CIDR %s is not a /24 of its cluster's %s", n.Name, n.PodCIDR, o.PodCIDR)
			}
		}
	}
	for i, a := range ClusterNames {
		for _, b := range ClusterNames[i+1:] {
			ab := tunnelCIDR(gatewayKey{cluster: a, namespace: consts.TenantNamespacePrefix + b})
			ba := tunnelCIDR(gatewayKey{cluster: b, namespace: consts.TenantNamespacePrefix + a})
			if ab != ba {
				t.Errorf("the tunnel of %s and %s is %s from one end, %s from the other", a, b, ab, ba)
			}
			if _, err := netip.ParsePrefix(ab); err != nil {
				t.Errorf("the tunnel of %s and %s: %v", a, b, err)
			}
			distinct("tunnel CIDR", ab, a+"/"+b)
		}
	}
	if got := tunnelCIDR(gatewayKey{cluster: "consumer", namespace: consts.TenantNamespacePrefix + "elsewhere"}); got != "" {
		t.Errorf("a tunnel to a cluster outside the sandbox: %q, want the gateway's default", got)
	}
}
