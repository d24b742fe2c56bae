package e2e

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
)

// The examples' tests also run under OpenTofu, the other Terraform CLI, as built by
// tools/tofu/build.sh (make tofu). The CLI configuration is the same: OpenTofu reads
// TF_CLI_CONFIG_FILE, and both the dev_overrides key "peerkit/liqo" and the examples' source
// "peerkit/liqo" stand for registry.opentofu.org/peerkit/liqo under it (registry.terraform.io
// under terraform), so the override applies under either CLI.

// tofuEnv names the OpenTofu CLI the tests run; `make test` sets it.
const tofuEnv = "LIQO_TOFU"

// terraformOnly are the example folders (relative to examples/) that use what OpenTofu 1.12
// lacks: list resources (`list` blocks of .tfquery.hcl files) and actions (`action` blocks,
// action_trigger). They are not run under OpenTofu; TestTerraformOnlyExamples checks that this
// is exactly the folders that use them, or call a module that does, so nothing else depends on
// them.
var terraformOnly = []string{
	"actions/liqo_consumer_identity_renew",
	"actions/liqo_peering_test",
	"actions/liqo_tenant_cordon",
	"day2",
	"list-resources/liqo_namespace_offloading",
	"list-resources/liqo_peering",
	"list-resources/liqo_resource_slice",
	"list-resources/liqo_tenant",
}

// tofuCannotTest are the examples whose tests/ OpenTofu 1.12.6 cannot run, with what it says
// instead. They still run under tofu and must fail with that message: when they pass, OpenTofu
// was fixed and the entry goes.
var tofuCannotTest = map[string]string{
	// An import block with a mocked provider: tofu test panics, where terraform test imports
	// nothing and takes override_resource's values.
	"liqoctl-import": "Importing is not supported in testing context",
}

// terraformOnlyFeature matches, at the start of a line, a block or argument of the features
// OpenTofu 1.12 lacks.
var terraformOnlyFeature = regexp.MustCompile(`(?m)^\s*(?:(?:list|action)\s+"|action_trigger\b)`)

// moduleSource matches a module's local source.
var moduleSource = regexp.MustCompile(`(?m)^\s*source\s*=\s*"(\.\.?/[^"]+)"`)

// requireTofu returns the OpenTofu CLI that LIQO_TOFU names, skipping the test when it is unset.
func requireTofu(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(tofuEnv)
	if bin == "" {
		t.Skip(tofuEnv + " is not set: run through `make test`, which builds OpenTofu (make tofu)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s=%s: %v; run `make tofu`", tofuEnv, bin, err)
	}
	return bin
}

// cliName is the name of a CLI for messages: terraform, or tofu for OpenTofu's.
func cliName(cli string) string {
	if cli == "terraform" {
		return cli
	}
	return "tofu"
}

// skipTerraformOnly skips an example's subtest under OpenTofu when the example is Terraform-only.
func skipTerraformOnly(t *testing.T, cli, example string) {
	t.Helper()
	if cliName(cli) == "tofu" && slices.Contains(terraformOnly, example) {
		t.Skipf("examples/%s uses list resources or actions, which OpenTofu 1.12 lacks", example)
	}
}

// expectTofuCannot checks that tofu test failed in an example of tofuCannotTest with its message.
func expectTofuCannot(t *testing.T, example, message, out string, code int) {
	t.Helper()
	if code == 0 || !strings.Contains(out, message) {
		t.Errorf("tofu test in examples/%s: exit %d without %q: if OpenTofu now runs these tests, remove the example from tofuCannotTest\n%s",
			example, code, message, out)
		return
	}
	t.Logf("tofu test in examples/%s fails as known: %s", example, message)
}

// stopLeftProviders kills the provider processes of the bins folder still running: tofu test
// leaves its provider running when it panics (tofuCannotTest), and the process would keep what it
// inherited, such as the test's lock on the network.
func stopLeftProviders(t *testing.T, bins string) {
	t.Helper()
	for _, pid := range testenv.ProcessesUsing(bins) {
		t.Logf("stopping provider process %d, left running by a crashed CLI", pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Errorf("stopping provider process %d: %v", pid, err)
		}
	}
}

// TestTerraformOnlyExamples checks that terraformOnly lists exactly the example folders whose
// configuration uses list resources or actions, directly or through a local module.
func TestTerraformOnlyExamples(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	got := terraformOnlyFolders(t, filepath.Join(root, "examples"))
	want := slices.Sorted(slices.Values(terraformOnly))
	if !slices.Equal(got, want) {
		t.Errorf("the examples using list resources or actions (Terraform-only) are %q, but terraformOnly lists %q: update terraformOnly, or keep those features out of the other examples", got, want)
	}
}

// terraformOnlyFolders returns the folders (relative to examples, sorted) whose .tf or
// .tfquery.hcl files use a Terraform-only feature, or call a local module in such a folder.
func terraformOnlyFolders(t *testing.T, examples string) []string {
	t.Helper()
	uses := map[string]bool{}
	calls := map[string][]string{}
	err := filepath.WalkDir(examples, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isConfigFile(path) {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		if terraformOnlyFeature.Match(src) {
			uses[dir] = true
		}
		for _, m := range moduleSource.FindAllSubmatch(src, -1) {
			calls[dir] = append(calls[dir], filepath.Join(dir, string(m[1])))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A caller of a Terraform-only module is Terraform-only too, at any depth.
	for changed := true; changed; {
		changed = false
		for dir, modules := range calls {
			if !uses[dir] && slices.ContainsFunc(modules, func(m string) bool { return uses[m] }) {
				uses[dir], changed = true, true
			}
		}
	}
	var folders []string
	for dir := range uses {
		rel, err := filepath.Rel(examples, dir)
		if err != nil {
			t.Fatal(err)
		}
		folders = append(folders, filepath.ToSlash(rel))
	}
	slices.Sort(folders)
	return folders
}

// isConfigFile reports whether a file is Terraform configuration: .tf, or .tfquery.hcl (list
// blocks).
func isConfigFile(path string) bool {
	return strings.HasSuffix(path, ".tf") || strings.HasSuffix(path, ".tfquery.hcl")
}
