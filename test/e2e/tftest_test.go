package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
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
	bins := build(t, root, ".")
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
