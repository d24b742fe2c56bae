package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// queryLiqoctlPeering finds the peering upstream liqoctl made with `terraform query` over the
// list resource liqo_peering, then lets `terraform query -generate-config-out` write its
// configuration, whose plan only imports it (no change): how a user brings liqoctl's peerings
// under Terraform in bulk.
func (r *sandboxRun) queryLiqoctlPeering(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	main := fmt.Sprintf(`terraform {
  required_providers {
    liqo = { source = "peerkit/liqo" }
  }
}

provider "liqo" {
  clusters = {
    consumer = { config_path = %q }
    provider = { config_path = %q }
  }
}
`, filepath.Join(r.state, "consumer.kubeconfig"), filepath.Join(r.state, "provider.kubeconfig"))
	query := "list \"liqo_peering\" \"all\" {\n  provider = liqo\n}\n"
	for name, src := range map[string]string{"main.tf": main, "peerings.tfquery.hcl": query} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, took, code := terraformIn(t, dir, r.tfEnv, "query", "-no-color")
	if code != 0 || !strings.Contains(out, "consumer -> provider") || strings.Contains(out, "provider -> consumer") {
		t.Fatalf("terraform query over liqoctl's peering: exit %d, want the one peering consumer -> provider\n%s", code, out)
	}
	t.Logf("terraform query found liqoctl's peering in %s:\n%s", took.Round(time.Millisecond), out)
	if out, _, code := terraformIn(t, dir, r.tfEnv, "query", "-no-color", "-generate-config-out=generated.tf"); code != 0 {
		t.Fatalf("terraform query -generate-config-out: exit %d\n%s", code, out)
	}
	out, _, code = terraformIn(t, dir, r.tfEnv, "plan", "-no-color", "-input=false")
	if code != 0 || !strings.Contains(out, "Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.") {
		generated, _ := os.ReadFile(filepath.Join(dir, "generated.tf"))
		t.Errorf("plan of the generated configuration: exit %d, want only the import\n%s\ngenerated.tf:\n%s", code, out, generated)
	}
}
