package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// LiqoctlEnv names upstream Liqo's liqoctl v1.2.0, which `make liqoctl` builds
// (tools/liqoctl/build.sh) and `make test` sets.
const LiqoctlEnv = "LIQO_LIQOCTL"

// LiqoctlBin returns the liqoctl binary LiqoctlEnv names, and skips tb when it is unset.
func LiqoctlBin(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv(LiqoctlEnv)
	if bin == "" {
		tb.Skipf("%s is not set: run through `make test`, which builds upstream liqoctl v1.2.0 (make liqoctl)", LiqoctlEnv)
	}
	if _, err := os.Stat(bin); err != nil {
		tb.Fatalf("%s=%s: %v (make liqoctl builds it)", LiqoctlEnv, bin, err)
	}
	return bin
}

// liqoctlTimeout bounds one liqoctl command, whatever its own --timeout: a hung wait fails the
// test, not the suite.
const liqoctlTimeout = 4 * time.Minute

// RunLiqoctl runs liqoctl bin with args and --kubeconfig kubeconfig, and returns its standard
// output; it fails the test on a non-zero exit and reports a warning or error on standard error.
func RunLiqoctl(tb testing.TB, bin, kubeconfig string, args ...string) []byte {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), liqoctlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", kubeconfig)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("liqoctl %s (kubeconfig %s): %v\n%s%s", strings.Join(args, " "), kubeconfig, err, stdout.Bytes(), stderr.Bytes())
	}
	if strings.Contains(stderr.String(), "WARN") || strings.Contains(stderr.String(), "ERRO") {
		tb.Errorf("liqoctl %s (kubeconfig %s) warns:\n%s", strings.Join(args, " "), kubeconfig, stderr.Bytes())
	}
	return stdout.Bytes()
}
