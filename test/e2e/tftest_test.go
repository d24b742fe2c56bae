package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// The examples' own tests, written for `terraform test` (Terraform >= 1.7 for mock providers),
// live in three folders of an example:
//
//   - tests/: tests that reach no cluster (a mocked provider, or the real one planning); plain
//     `terraform test` runs them, and each must pass;
//   - tests/rejected/: one run per file that must fail at plan with the provider's messages,
//     named by the file's "# expect-error: <message>" lines (terraform test cannot expect a
//     provider's error, only custom conditions), run file by file;
//   - tests/sandbox/: tests against the sandbox's two clusters, run with
//     -test-directory=tests/sandbox and the variables of the two-cluster examples
//     (consumer_kubeconfig, provider_kubeconfig, networking).
const (
	unitTestDir     = "tests"
	rejectedTestDir = "tests/rejected"
	sandboxTestDir  = "tests/sandbox"
	testFileSuffix  = ".tftest.hcl"
)

// exampleTests are the test files of one example folder, by folder.
type exampleTests struct {
	unit, sandbox bool
	// rejected are the files of tests/rejected, relative to the example's folder.
	rejected []string
}

// findExampleTests returns the examples (folders relative to examples) that have test files,
// sorted, and their tests; it fails the test for a test file in any other folder.
func findExampleTests(t *testing.T, examples string) ([]string, map[string]*exampleTests) {
	t.Helper()
	found := map[string]*exampleTests{}
	of := func(example string) *exampleTests {
		if found[example] == nil {
			found[example] = &exampleTests{}
		}
		return found[example]
	}
	err := filepath.WalkDir(examples, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, testFileSuffix) {
			return err
		}
		rel, err := filepath.Rel(examples, path)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		switch {
		case strings.HasSuffix(dir, "/"+rejectedTestDir):
			example := strings.TrimSuffix(dir, "/"+rejectedTestDir)
			of(example).rejected = append(of(example).rejected, rejectedTestDir+"/"+filepath.Base(rel))
		case strings.HasSuffix(dir, "/"+sandboxTestDir):
			of(strings.TrimSuffix(dir, "/"+sandboxTestDir)).sandbox = true
		case strings.HasSuffix(dir, "/"+unitTestDir):
			of(strings.TrimSuffix(dir, "/"+unitTestDir)).unit = true
		default:
			t.Errorf("examples/%s: a test file outside an example's %s/, %s/ or %s/ folder", rel, unitTestDir, rejectedTestDir, sandboxTestDir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(found))
	for name := range found {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, found
}

// copyExamples copies the configuration and test files of the repository's examples into a new
// folder, so that terraform's files (.terraform, lock files) stay out of the tree, and returns
// the copy's examples folder.
func copyExamples(t *testing.T, root string) string {
	t.Helper()
	return testenv.CopyTerraformTree(t, filepath.Join(root, "examples"))
}

// devOverridesEnv is the environment of a terraform that installs the provider of the bins
// folder through dev_overrides (no registry).
func devOverridesEnv(t *testing.T, bins string) []string {
	t.Helper()
	rc := filepath.Join(t.TempDir(), "terraformrc")
	cfg := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"peerkit/liqo\" = %q\n  }\n  direct {}\n}\n", bins)
	if err := os.WriteFile(rc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
}

// expectErrorLine is a rejected test file's line naming a message its run must fail with.
var expectErrorLine = regexp.MustCompile(`(?m)^#\s*expect-error:\s*(.+?)\s*$`)

// oneLine folds every run of white space into one space: terraform wraps its messages.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestExampleTests runs the examples' tests that need no cluster with the provider built from
// the tree: in every example with tests/, `terraform test` must pass; each file of
// tests/rejected/ must fail with the messages of its expect-error lines. Its subtest tofu runs
// the same with OpenTofu (LIQO_TOFU), in another copy of the examples, but for what OpenTofu
// lacks (terraformOnly, tofuCannotTest).
func TestExampleTests(t *testing.T) {
	requireTerraform(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	names, tests := findExampleTests(t, filepath.Join(root, "examples"))
	if len(names) == 0 {
		t.Fatal("no example has terraform test files")
	}
	bins := testenv.BuildOnce(t, ".")
	t.Cleanup(func() { stopLeftProviders(t, bins) })
	env := devOverridesEnv(t, bins)
	runExampleTests(t, "terraform", copyExamples(t, root), env, names, tests)
	t.Run("tofu", func(t *testing.T) {
		runExampleTests(t, requireTofu(t), copyExamples(t, root), env, names, tests)
	})
}

// runExampleTests runs, with the given CLI (terraform, or OpenTofu's tofu), the tests of
// tests/ and tests/rejected/ of the named examples in a copy of the examples, one subtest each.
func runExampleTests(t *testing.T, cli, examples string, env []string, names []string, tests map[string]*exampleTests) {
	t.Helper()
	name := cliName(cli)
	for _, example := range names {
		t.Run(example, func(t *testing.T) {
			skipTerraformOnly(t, cli, example)
			dir := filepath.Join(examples, example)
			// Installs the local modules the example calls (init would also look the provider up in
			// the registry).
			if out, _, code := cliIn(t, cli, dir, env, "get", "-no-color"); code != 0 {
				t.Fatalf("%s get: exit %d\n%s", name, code, out)
			}
			if tests[example].unit {
				out, took, code := cliIn(t, cli, dir, env, "test", "-no-color")
				switch cannot, known := tofuCannotTest[example]; {
				case known && name == "tofu":
					expectTofuCannot(t, example, cannot, out, code)
				case code != 0:
					t.Errorf("%s test in examples/%s: exit %d\n%s", name, example, code, out)
				default:
					t.Logf("%s test in examples/%s, %s:\n%s", name, example, took.Round(100*time.Millisecond), out)
				}
			}
			for _, file := range tests[example].rejected {
				t.Run(filepath.Base(file), func(t *testing.T) { expectRejected(t, cli, dir, env, file) })
			}
		})
	}
}

// expectRejected runs one file of an example's tests/rejected/ and checks that it fails with the
// messages of its expect-error lines.
func expectRejected(t *testing.T, cli, dir string, env []string, file string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	want := expectErrorLine.FindAllStringSubmatch(string(src), -1)
	if len(want) == 0 {
		t.Fatalf("%s has no \"# expect-error: <message>\" line", file)
	}
	out, _, code := cliIn(t, cli, dir, env, "test", "-no-color", "-test-directory="+rejectedTestDir, "-filter="+file)
	if code == 0 {
		t.Fatalf("%s test %s passed, want a failure at plan\n%s", cliName(cli), file, out)
	}
	for _, w := range want {
		if !strings.Contains(oneLine(out), oneLine(w[1])) {
			t.Errorf("%s test %s: exit %d without the message %q\n%s", cliName(cli), file, code, w[1], out)
		}
	}
}

// TestExampleTestsOnSandbox runs the examples' tests/sandbox/ against a fresh two-cluster
// sandbox, with its kubeconfigs and networking; terraform test destroys what each file made, so
// the clusters must then hold nothing of a peering. Its subtest tofu then runs the same with
// OpenTofu (LIQO_TOFU) on the same sandbox, in another copy of the examples.
func TestExampleTestsOnSandbox(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	names, tests := findExampleTests(t, filepath.Join(root, "examples"))
	names = slices.DeleteFunc(names, func(name string) bool { return !tests[name].sandbox })
	if len(names) == 0 {
		t.Skip("no example has tests for the sandbox")
	}
	r := startSandbox(t, 2)
	r.runSandboxTests(t, "terraform", copyExamples(t, root), names)
	t.Run("tofu", func(t *testing.T) {
		r.runSandboxTests(t, requireTofu(t), copyExamples(t, root), names)
	})
}

// runSandboxTests runs, with the given CLI, the tests/sandbox/ of the named examples in a copy of
// the examples, one subtest each, and checks that each leaves nothing on the clusters.
func (r *sandboxRun) runSandboxTests(t *testing.T, cli, examples string, names []string) {
	t.Helper()
	name := cliName(cli)
	for _, example := range names {
		t.Run(example, func(t *testing.T) {
			skipTerraformOnly(t, cli, example)
			out, took, code := cliIn(t, cli, filepath.Join(examples, example), r.tfEnv, "test", "-no-color",
				"-test-directory="+sandboxTestDir,
				"-var", "consumer_kubeconfig="+filepath.Join(r.state, "consumer.kubeconfig"),
				"-var", "provider_kubeconfig="+filepath.Join(r.state, "provider.kubeconfig"),
				"-var", fmt.Sprintf("networking=%t", r.networking))
			if code != 0 {
				t.Errorf("%s test -test-directory=%s in examples/%s (networking %t): exit %d\n%s",
					name, sandboxTestDir, example, r.networking, code, out)
			} else {
				t.Logf("%s test -test-directory=%s in examples/%s (networking %t), %s:\n%s",
					name, sandboxTestDir, example, r.networking, took.Round(100*time.Millisecond), out)
			}
			r.expectNothingLeft(t)
		})
	}
}

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
