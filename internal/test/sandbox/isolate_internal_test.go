package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestIsolateFlag: -isolate values (each cluster once), written back for the supervisor in the
// order given; accepted for running clusters with KWOK nodes and networking; refused otherwise,
// naming the flag, the cluster and the reason.
func TestIsolateFlag(t *testing.T) {
	var isolate []string
	for _, v := range []string{"consumer", "provider", "consumer"} {
		if err := ParseIsolate(&isolate, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := ParseIsolate(&isolate, " "); err == nil || !strings.Contains(err.Error(), "-isolate needs a cluster's name") {
		t.Errorf("an empty value: %v", err)
	}
	s := &Sandbox{Isolate: isolate}
	if got, want := s.IsolateArgs(), []string{"-isolate", "consumer", "-isolate", "provider"}; !slices.Equal(got, want) {
		t.Errorf("IsolateArgs = %q, want %q", got, want)
	}
	if err := s.validateIsolate(NodesKWOK, ""); err != nil {
		t.Errorf("isolating consumer and provider with networking: %v", err)
	}
	if !s.isolated("consumer") || s.isolated("provider-2") {
		t.Errorf("isolated(consumer) = %v, isolated(provider-2) = %v", s.isolated("consumer"), s.isolated("provider-2"))
	}
	for _, tc := range []struct {
		name      string
		sb        *Sandbox
		nodes     string
		why, want string
	}{
		{"a third cluster in a sandbox of two", &Sandbox{Isolate: []string{"provider-2"}}, NodesKWOK, "",
			"-isolate provider-2: no such cluster in this sandbox (consumer, provider)"},
		{"an unknown cluster", &Sandbox{Isolate: []string{"nope"}, Clusters: 3}, NodesKWOK, "", "-isolate nope: no such cluster"},
		{"real nodes", &Sandbox{Isolate: []string{"consumer"}}, NodesReal, "", "-isolate works with KWOK nodes only (-nodes kwok)"},
		{"no networking", &Sandbox{Isolate: []string{"consumer"}}, NodesKWOK, "the supervisor is not root",
			"-isolate consumer needs the sandbox's networking, which cannot run here: the supervisor is not root"},
	} {
		if err := tc.sb.validateIsolate(tc.nodes, tc.why); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// Without -isolate, nothing is checked (no networking needed).
	if err := (&Sandbox{}).validateIsolate(NodesReal, "the supervisor is not root"); err != nil {
		t.Errorf("no -isolate: %v", err)
	}
	// The exported check asks whether networking can run: without a gateway binary it cannot.
	if err := (&Sandbox{Isolate: []string{"consumer"}}).ValidateIsolate(NodesKWOK); err == nil || !strings.Contains(err.Error(), "needs the sandbox's networking") {
		t.Errorf("ValidateIsolate without a gateway binary: %v", err)
	}
}

// TestIsolatedUsage: the usage names the isolated clusters (recorded by the supervisor) and
// says what isolation means; with none, it says nothing about it.
func TestIsolatedUsage(t *testing.T) {
	var out bytes.Buffer
	s := &Sandbox{StateDir: t.TempDir(), Out: &out}
	s.printIsolatedUsage()
	if out.Len() != 0 {
		t.Errorf("usage without isolated clusters: %q", out.String())
	}
	s.Isolate = []string{"consumer"}
	if err := s.recordIsolated(); err != nil {
		t.Fatal(err)
	}
	s.printIsolatedUsage()
	for _, want := range []string{"the controller manager of consumer runs in its pod network namespace (lqsb-<cluster>-pod)",
		"no other cluster's but through the\ntunnel"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage %q does not say %q", out.String(), want)
		}
	}
	s.removeStateFiles()
	if _, err := os.Stat(filepath.Join(s.StateDir, isolatedFile)); !os.IsNotExist(err) {
		t.Errorf("the isolated clusters' record is left after the state files are removed: %v", err)
	}
}

// TestProxyServiceShape: the liqo-proxy Service as upstream's chart makes it (name, namespace,
// app label, port 8118 TCP named http, ClusterIP), marked as served by the sandbox; the proxy
// reaches the API server's host:port.
func TestProxyServiceShape(t *testing.T) {
	svc := proxyService()
	if svc.Namespace != consts.LiqoNamespace || svc.Name != "liqo-proxy" || svc.Labels[consts.AppNameLabel] != "proxy" ||
		svc.Labels["app.kubernetes.io/part-of"] != "liqo" || svc.Spec.Type != "ClusterIP" || svc.Annotations[sandboxServesAnnotation] == "" {
		t.Errorf("the proxy Service: %+v", svc)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8118 || svc.Spec.Ports[0].Protocol != "TCP" || svc.Spec.Ports[0].Name != "http" {
		t.Errorf("the proxy Service's ports: %+v", svc.Spec.Ports)
	}
	for host, want := range map[string]string{"https://127.0.0.1:41234": "127.0.0.1:41234", "https://api.example": "api.example:443"} {
		got, err := apiServerHostPort(&testenv.Cluster{Name: "c", Config: &rest.Config{Host: host}})
		if err != nil || got != want {
			t.Errorf("apiServerHostPort(%s) = %q, %v; want %q", host, got, err, want)
		}
	}
	if _, err := apiServerHostPort(&testenv.Cluster{Name: "c", Config: &rest.Config{Host: "127.0.0.1:1"}}); err == nil {
		t.Errorf("an API server address without a scheme: no error")
	}
}
