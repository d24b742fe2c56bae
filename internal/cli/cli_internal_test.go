package cli

import (
	"bytes"
	"errors"
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
