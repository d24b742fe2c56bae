package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExit(t *testing.T) {
	var out bytes.Buffer
	code := -1
	exit(&out, func(c int) { code = c }, "liqo-x", nil)
	if code != -1 || out.Len() != 0 {
		t.Fatalf("no error: exited %d, printed %q", code, out.String())
	}
	exit(&out, func(c int) { code = c }, "liqo-x", errors.New("boom"))
	if code != 1 || out.String() != "liqo-x: boom\n" {
		t.Errorf("an error: exited %d, printed %q; want 1 and \"liqo-x: boom\"", code, out.String())
	}
}

func TestRESTConfig(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://192.0.2.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := RESTConfig(kc)
	if err != nil || cfg.Host != "https://192.0.2.1:6443" || cfg.BearerToken != "t" {
		t.Fatalf("RESTConfig(file) = %+v, %v", cfg, err)
	}
	if _, err := RESTConfig(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "loading --kubeconfig") {
		t.Errorf("RESTConfig(missing file) = %v, want an error naming --kubeconfig", err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := RESTConfig(""); err == nil || !strings.Contains(err.Error(), "no --kubeconfig and not in a cluster") {
		t.Errorf("RESTConfig(\"\") outside a pod = %v, want an error saying neither is there", err)
	}
}

func TestManagerFlags(t *testing.T) {
	var m ManagerFlags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	m.Bind(fs, "the cluster to run in")
	if err := Parse(fs, []string{"--kubeconfig", "/k", "--metrics-bind-address", "0", "--leader-elect", "--zap-log-level", "debug"}); err != nil {
		t.Fatal(err)
	}
	if m.Kubeconfig != "/k" || m.MetricsAddr != "0" || m.ProbeAddr != ":8081" || !m.LeaderElect {
		t.Errorf("flags %+v", m)
	}
	if !strings.Contains(fs.Lookup("kubeconfig").Usage, "the cluster to run in") {
		t.Errorf("--kubeconfig's usage %q does not say which cluster", fs.Lookup("kubeconfig").Usage)
	}
	fs2 := flag.NewFlagSet("x", flag.ContinueOnError)
	fs2.SetOutput(io.Discard)
	new(ManagerFlags).Bind(fs2, "c")
	if err := Parse(fs2, []string{"stray"}); err == nil || !strings.Contains(err.Error(), "unexpected arguments [stray]") {
		t.Errorf("Parse with a stray argument: %v", err)
	}
	if err := Parse(fs2, []string{"--no-such-flag"}); err == nil || !strings.Contains(err.Error(), "parsing flags") {
		t.Errorf("Parse with an unknown flag: %v", err)
	}
}

// TestNoGlobalKubeconfigFlag: nothing this package imports defines a global --kubeconfig flag
// (controller-runtime's pkg/client/config does, in its init): the gateway defines its own on
// the global flag set, and the second definition panics at start.
func TestNoGlobalKubeconfigFlag(t *testing.T) {
	if f := flag.Lookup("kubeconfig"); f != nil {
		t.Errorf("a package imported by internal/cli defines the global flag --kubeconfig (%q): liqo-gateway would panic at start", f.Usage)
	}
}
