package testenv

import (
	"bytes"
	"context"
	"encoding/json"
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
	RequireLong(tb, "runs upstream liqoctl")
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

// LiqoctlPeer is what `liqoctl info peer <id> -o json` says of one peer (the fields checked).
type LiqoctlPeer struct {
	Authentication struct {
		Status         string `json:"status"`
		APIServerAddr  string `json:"APIServerAddr"`
		ResourceSlices []struct {
			Name     string `json:"name"`
			Action   string `json:"action"`
			Accepted bool   `json:"accepted"`
		} `json:"resourceSlices"`
	} `json:"authentication"`
	Info struct {
		Role string `json:"role"`
	} `json:"info"`
	Network struct {
		Status  string `json:"status"`
		Gateway struct {
			Address []string `json:"address"`
			Port    int32    `json:"port"`
			Role    string   `json:"role"`
		} `json:"gateway"`
	} `json:"network"`
	Offloading struct {
		Status       string `json:"status"`
		VirtualNodes []struct {
			Name          string `json:"name"`
			Status        string `json:"status"`
			ResourceSlice string `json:"resourceSlice"`
		} `json:"virtualNodes"`
	} `json:"offloading"`
}

// ExpectInfoPeer runs upstream's `liqoctl info peer <peer> -o json` against kubeconfig and
// checks that it names peer in role ("Provider" or "Consumer") with authentication Healthy and
// one accepted slice, and, for a provider, one Healthy virtual node.
func ExpectInfoPeer(tb testing.TB, bin, kubeconfig, peer, role string) {
	tb.Helper()
	var out map[string]LiqoctlPeer
	raw := RunLiqoctl(tb, bin, kubeconfig, "info", "peer", peer, "-o", "json")
	if err := json.Unmarshal(raw, &out); err != nil {
		tb.Fatalf("liqoctl info peer %s -o json (kubeconfig %s): %v\n%s", peer, kubeconfig, err, raw)
	}
	p := out[peer]
	ok := p.Info.Role == role && p.Authentication.Status == "Healthy" && len(p.Authentication.ResourceSlices) == 1 &&
		p.Authentication.ResourceSlices[0].Accepted
	if role == "Provider" {
		ok = ok && len(p.Offloading.VirtualNodes) == 1 && p.Offloading.VirtualNodes[0].Status == "Healthy"
	}
	if !ok {
		tb.Errorf("liqoctl info peer %s (kubeconfig %s): want role %s, authentication Healthy, one accepted slice (and a healthy virtual node on the consumer):\n%s",
			peer, kubeconfig, role, raw)
	}
}
