package remap_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/remap"
)

// TestRemapped: a Configuration is remapped once its status maps every CIDR of its spec, and
// not while a condition observed an older generation (the status of the spec before an update).
func TestRemapped(t *testing.T) {
	spec := netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{"10.0.0.0/16"}, External: []netv1beta1.CIDR{"10.70.0.0/16"}}
	conf := func(gen int64, status *netv1beta1.ClusterConfigCIDR, condGen int64) *netv1beta1.Configuration {
		c := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		c.Spec.Remote.CIDR = spec
		if status != nil {
			c.Status.Remote = &netv1beta1.ClusterConfig{CIDR: *status}
			c.Status.Conditions = []metav1.Condition{{Type: string(netv1beta1.ConfigurationConditionNetworkCIDRsConfigured), Status: metav1.ConditionTrue,
				Reason: "Remapped", ObservedGeneration: condGen}}
		}
		return c
	}
	full := &netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{"10.64.0.0/16"}, External: []netv1beta1.CIDR{"10.70.0.0/16"}}
	for _, tc := range []struct {
		name    string
		conf    *netv1beta1.Configuration
		want    bool
		seenHas string
	}{
		{"no status", conf(1, nil, 0), false, "no status.remote, no conditions"},
		{"pod only", conf(1, &netv1beta1.ClusterConfigCIDR{Pod: full.Pod}, 1), false, "external []"},
		{"every CIDR, current", conf(2, full, 2), true, "pod [10.64.0.0/16] external [10.70.0.0/16]"},
		{"every CIDR, stale condition", conf(3, full, 2), false, "observed generation 2, the object is at 3"},
		{"every CIDR, no generation (upstream's)", conf(3, full, 0), true, "NetworkCIDRsConfigured=True"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, seen := remap.Remapped(tc.conf)
			if done != tc.want || !strings.Contains(seen, tc.seenHas) {
				t.Errorf("Remapped = %t, %q; want %t and a description with %q", done, seen, tc.want, tc.seenHas)
			}
		})
	}
}
