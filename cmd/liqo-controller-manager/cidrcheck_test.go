package main

import (
	"io"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/controllers/fabricipam"
	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
)

// TestChartCIDRCheckAgrees: for each of the chart's CIDR cases, the chart's install-time
// check (helm template) and the manager's own at start (its flags as the chart passes them,
// the identity's validation and the fabric's IPAM) give the same verdict, but for the checks
// the chart leaves to the manager, which the manager must then make.
func TestChartCIDRCheckAgrees(t *testing.T) {
	h := chart.New(t)
	for _, tc := range chart.CIDRCases {
		_, chartErr := h.TryTemplate("liqo", tc.Values())
		o, managerErr := parse(tc.ManagerArgs(), io.Discard)
		if managerErr == nil {
			_, managerErr = fabricipam.New(nil, o.identity.InternalCIDR)
		}
		switch {
		case tc.ManagerOnly && (chartErr != nil || managerErr == nil):
			t.Errorf("%s: left to the manager, want the chart to accept (%v) and the manager to refuse (%v)", tc.Name, chartErr, managerErr)
		case !tc.ManagerOnly && (chartErr == nil) != (managerErr == nil):
			t.Errorf("%s: the chart says %v, the manager %v", tc.Name, chartErr, managerErr)
		}
	}
}
