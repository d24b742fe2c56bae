package provider_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/provider"
)

var (
	providerBinOnce sync.Once
	providerBinDir  string
	providerBinErr  error
)

// providerBinary builds terraform-provider-liqo once per test binary and returns its folder.
func providerBinary(t *testing.T) string {
	t.Helper()
	providerBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "liqo-provider-bin-")
		if err != nil {
			providerBinErr = err
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "terraform-provider-liqo"), "..").CombinedOutput()
		if err != nil {
			providerBinErr = fmt.Errorf("building provider: %w\n%s", err, out)
			return
		}
		providerBinDir = dir
	})
	if providerBinErr != nil {
		t.Fatal(providerBinErr)
	}
	return providerBinDir
}

// oneLine folds every run of white space into one space: terraform wraps its messages.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// requiredProvidersBlock names the provider's source for the terraform CLI (resource.Test
// writes its own).
const requiredProvidersBlock = "terraform {\n  required_providers {\n    liqo = { source = \"peerkit/liqo\" }\n  }\n}\n"

// terraformDir is a working folder for the real terraform CLI with the built provider
// installed through dev_overrides.
type terraformDir struct {
	dir, bin string
	env      []string
}

// newTerraformDir copies the .tf files of src into a new folder.
func newTerraformDir(t *testing.T, src string) *terraformDir {
	t.Helper()
	bin, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal("terraform is not on PATH: install Terraform >= 1.11 (.ci/run installs it)")
	}
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(src, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .tf files in %s (%v)", src, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rc := filepath.Join(dir, ".terraformrc")
	overrides := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n",
		strings.TrimPrefix(provider.Address, "registry.terraform.io/"), providerBinary(t))
	if err := os.WriteFile(rc, []byte(overrides), 0o600); err != nil {
		t.Fatal(err)
	}
	return &terraformDir{dir: dir, bin: bin, env: append(os.Environ(),
		"TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_ACC=")}
}

func (d *terraformDir) command(args ...string) *exec.Cmd {
	cmd := exec.Command(d.bin, args...)
	cmd.Dir, cmd.Env = d.dir, d.env
	return cmd
}

// run runs terraform and fails the test on error, with its output.
func (d *terraformDir) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := d.command(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("terraform %s: %v\n%s", args[0], err, out)
	}
	return string(out)
}

// exitCode runs terraform and returns its exit code (for -detailed-exitcode) and output.
func (d *terraformDir) exitCode(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, err := d.command(args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("terraform %s: %v\n%s", args[0], err, out)
	return -1, ""
}
