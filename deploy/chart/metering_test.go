package chart_test

import (
	"testing"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
)

// TestContractMeteringInterval: the manager meters contracts every 30s by default, and every
// contractMeteringInterval when set.
func TestContractMeteringInterval(t *testing.T) {
	h := chart.New(t)
	base := map[string]any{"clusterID": "cl-a", "podCIDR": "10.244.0.0/16"}
	wantArgs(t, managerArgs(t, h.Template("liqo", base)), []string{"--contract-metering-interval=30s"}, nil)
	base["contractMeteringInterval"] = "1m"
	wantArgs(t, managerArgs(t, h.Template("liqo", base)), []string{"--contract-metering-interval=1m"}, nil)
}
