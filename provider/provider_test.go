package provider_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/peerkit/terraform-provider-liqo/provider"
)

// TestProviderServesSchema: the provider server answers GetProviderSchema without diagnostics.
func TestProviderServesSchema(t *testing.T) {
	server, err := providerserver.NewProtocol6WithError(provider.New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := server.GetProviderSchema(t.Context(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Errorf("diagnostic: %s: %s", d.Summary, d.Detail)
	}
	if resp.Provider == nil {
		t.Fatal("no provider schema")
	}
}

// TestResourcesAreConfiguredCheckedAndImportable: every resource receives the provider's
// clusters, checks its plan (the `cluster` key, at least) and can be imported, and its type
// name is unique.
func TestResourcesAreConfiguredCheckedAndImportable(t *testing.T) {
	p := provider.New("test")()
	seen := map[string]bool{}
	for _, newResource := range p.Resources(t.Context()) {
		r := newResource()
		resp := &resource.MetadataResponse{}
		r.Metadata(t.Context(), resource.MetadataRequest{ProviderTypeName: "liqo"}, resp)
		name := resp.TypeName
		if !strings.HasPrefix(name, "liqo_") || seen[name] {
			t.Errorf("resource type name %q: want a unique liqo_ name", name)
		}
		seen[name] = true
		if _, ok := r.(resource.ResourceWithConfigure); !ok {
			t.Errorf("%s does not receive the provider's clusters (ResourceWithConfigure)", name)
		}
		if _, ok := r.(resource.ResourceWithModifyPlan); !ok {
			t.Errorf("%s does not check its plan (ResourceWithModifyPlan)", name)
		}
		if _, ok := r.(resource.ResourceWithImportState); !ok {
			t.Errorf("%s cannot be imported (ResourceWithImportState)", name)
		}
	}
	if len(seen) < 11 {
		t.Errorf("%d resources, want the 11 of the networking, authentication and offloading modules: %v", len(seen), seen)
	}
}

// TestTerraformReadsSchemaThroughDevOverrides builds the provider binary and runs the real
// `terraform providers schema -json` against it through a dev_overrides CLI configuration.
func TestTerraformReadsSchemaThroughDevOverrides(t *testing.T) {
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal("terraform is not on PATH: install Terraform >= 1.5 (.ci/run installs it)")
	}
	binDir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "terraform-provider-liqo"), "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building provider: %v\n%s", err, out)
	}
	work := t.TempDir()
	cliConfig := filepath.Join(work, "terraformrc")
	if err := os.WriteFile(cliConfig, fmt.Appendf(nil, "provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n",
		strings.TrimPrefix(provider.Address, "registry.terraform.io/"), binDir), 0o600); err != nil {
		t.Fatal(err)
	}
	main := "terraform {\n  required_providers {\n    liqo = { source = \"peerkit/liqo\" }\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tf, "providers", "schema", "-json")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+cliConfig, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("terraform providers schema: %v\n%s", err, stderr.String())
	}
	var schemas struct {
		ProviderSchemas map[string]json.RawMessage `json:"provider_schemas"`
	}
	if err := json.Unmarshal(out, &schemas); err != nil {
		t.Fatalf("decoding schema JSON: %v\n%s", err, out)
	}
	if _, ok := schemas.ProviderSchemas[provider.Address]; !ok {
		t.Errorf("schema JSON has providers %v, want %s", keys(schemas.ProviderSchemas), provider.Address)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
