package provider_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// upgradeConfig is a configuration of resources of both test clusters that need no controller.
const upgradeConfig = `
resource "liqo_tenant_namespace" "consumer" {
  cluster           = "consumer"
  remote_cluster_id = "upgrade-provider"
}

resource "liqo_tenant_namespace" "provider" {
  cluster           = "provider"
  remote_cluster_id = "upgrade-consumer"
}

resource "liqo_network_configuration" "consumer" {
  cluster           = "consumer"
  namespace         = liqo_tenant_namespace.consumer.name
  remote_cluster_id = "upgrade-provider"
  remote_pod_cidrs  = ["10.243.0.0/16"]
}

resource "liqo_gateway_keys" "consumer" {
  cluster           = "consumer"
  namespace         = liqo_tenant_namespace.consumer.name
  remote_cluster_id = "upgrade-provider"
}

resource "liqo_tenant" "provider" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.provider.name
  consumer_cluster_id = "upgrade-consumer"
  authz_policy        = "TolerateNoHandshake"
}
`

// rewriteState rewrites the state file of a folder with edit on each instance of the
// provider's resources, and returns how many it edited.
func rewriteState(t *testing.T, dir string, edit func(instance map[string]any)) int {
	t.Helper()
	path := filepath.Join(dir, "terraform.tfstate")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var whole map[string]any
	if err := json.Unmarshal(data, &whole); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range whole["resources"].([]any) {
		res := r.(map[string]any)
		if !strings.HasPrefix(res["type"].(string), "liqo_") {
			continue
		}
		for _, inst := range res["instances"].([]any) {
			edit(inst.(map[string]any))
			n++
		}
	}
	out, err := json.MarshalIndent(whole, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStateOfVersion0: a state written by the releases before schema versions (schema_version
// 0, no resource identity) works with the real terraform CLI: the plan reads it through the
// upgraders and has no changes; a refresh saves it at the current version, with identities.
func TestStateOfVersion0(t *testing.T) {
	d := newTerraformDir(t, tfSource(t, requiredProvidersBlock+providerBlock()+upgradeConfig))
	args := []string{"-input=false", "-no-color"}
	d.run(t, append([]string{"apply", "-auto-approve"}, args...)...)
	t.Cleanup(func() { d.run(t, append([]string{"destroy", "-auto-approve"}, args...)...) })

	n := rewriteState(t, d.dir, func(inst map[string]any) {
		inst["schema_version"] = 0
		delete(inst, "identity")
		delete(inst, "identity_schema_version")
	})
	if n != 5 {
		t.Fatalf("rewrote %d instances, want 5", n)
	}
	if code, out := d.exitCode(t, append([]string{"plan", "-detailed-exitcode"}, args...)...); code != 0 {
		t.Fatalf("plan over a state of version 0: exit %d, want 0 (no changes)\n%s", code, out)
	}
	d.run(t, append([]string{"apply", "-refresh-only", "-auto-approve"}, args...)...)
	rewriteState(t, d.dir, func(inst map[string]any) {
		if v, _ := inst["schema_version"].(float64); v != 1 {
			t.Errorf("after a refresh: schema_version %v, want 1", inst["schema_version"])
		}
		if inst["identity"] == nil {
			t.Errorf("after a refresh: no identity in %v", inst["attributes"])
		}
	})
}
