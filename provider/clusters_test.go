package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestLiqoAPIMissing: against a cluster without our CRDs, the check fails with a message saying
// the liqo controllers are not installed there, naming the cluster and its host; a cluster with
// them passes.
func TestLiqoAPIMissing(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "bare", SkipLiqoCRDs: true}, testenv.ClusterOptions{Name: "liqo"})
	set, err := newClusterSet(connectionModel{}, map[string]connectionModel{
		"bare": {ConfigPath: types.StringValue(env.Cluster("bare").KubeconfigPath)},
		"liqo": {ConfigPath: types.StringValue(env.Cluster("liqo").KubeconfigPath)},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = set.getWithLiqo(t.Context(), "bare")
	if err == nil {
		t.Fatal("no error for a cluster without the liqo API")
	}
	for _, want := range []string{`cluster "bare"`, env.Cluster("bare").Config.Host, "the liqo controllers are not installed there"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if _, err := set.get(t.Context(), "bare"); err != nil {
		t.Errorf("plain connection to the bare cluster: %v", err)
	}
	if _, err := set.getWithLiqo(t.Context(), "liqo"); err != nil {
		t.Errorf("cluster with the liqo API: %v", err)
	}
}
