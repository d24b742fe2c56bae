package chart_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
)

// TestDefaultOffer: by default the chart makes no offer (the manager gets no --default-offer,
// so it makes none and withdraws one it made before); with defaultOffer.spec, the manager gets
// the spec as JSON that decodes strictly into an Offer's spec and validates, and the name.
func TestDefaultOffer(t *testing.T) {
	h := chart.New(t)
	base := map[string]any{"clusterID": "cl-a", "podCIDR": "10.244.0.0/16"}
	wantArgs(t, managerArgs(t, h.Template("liqo", base)), []string{"--default-offer-name=default"}, []string{"--default-offer="})

	base["defaultOffer"] = map[string]any{"name": "gpus", "spec": map[string]any{
		"resources": map[string]any{"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
		"currency":  "EUR",
		"prices":    map[string]any{"cpu": map[string]any{"amount": "0.02"}, "memory": map[string]any{"amount": "0.004", "per": "1Gi"}},
		"consumers": []any{"cl-b"}, "maxDuration": "720h",
	}}
	args := managerArgs(t, h.Template("liqo", base))
	wantArgs(t, args, []string{"--default-offer-name=gpus"}, nil)
	var spec string
	for _, a := range args {
		if s, ok := strings.CutPrefix(a, "--default-offer="); ok {
			spec = s
		}
	}
	got, err := offers.ParseSpec(spec)
	if err != nil {
		t.Fatalf("the manager's --default-offer=%s: %v", spec, err)
	}
	if q := got.Resources["nvidia.com/gpu"]; q.Cmp(resource.MustParse("1")) != 0 || got.Prices["memory"].Per.String() != "1Gi" ||
		got.Currency != "EUR" || len(got.Consumers) != 1 || got.MaxDuration.Hours() != 720 {
		t.Errorf("the default offer's spec %+v is not the values'", got)
	}
}
