// Package chart runs the Helm CLI on the controller manager's chart (deploy/liqo), for tests:
// it renders the chart as `helm template` does and runs helm against test clusters. The helm
// binary is the one LIQO_HELM names (`make test` builds Helm 4 with `make helm4`); without it,
// tests that need it skip with a message. LIQO_HELM3 names a Helm 3 (`make helm`), which one test
// (TestInstallUpgradeUninstall) runs too, to compare its result with Helm 4's.
package chart

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// HelmEnv is the environment variable naming the helm binary (Helm 4).
const HelmEnv = "LIQO_HELM"

// Helm3Env is the environment variable naming a Helm 3 binary, for the comparison with Helm 4.
const Helm3Env = "LIQO_HELM3"

// Release is the release name the tests install the chart as.
const Release = "liqo"

// HookAnnotation marks a Helm hook: not part of the release's objects, made and deleted
// around an operation.
const HookAnnotation = "helm.sh/hook"

// Dir returns the chart's folder.
func Dir(tb testing.TB) string {
	tb.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(root, "deploy", "liqo")
}

// Helm returns the helm binary LIQO_HELM names, and skips tb when it is unset.
func Helm(tb testing.TB) string {
	tb.Helper()
	return helmFrom(tb, HelmEnv, "make helm4")
}

// helmFrom returns the helm binary the environment variable env names, and skips tb when it is
// unset; target is the make target that builds it.
func helmFrom(tb testing.TB, env, target string) string {
	tb.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		tb.Skipf("%s is not set: the chart is not checked with this helm (make test builds it with `%s` and sets it)", env, target)
	}
	if _, err := os.Stat(bin); err != nil {
		tb.Fatalf("%s=%s: %v (build it with `%s`)", env, bin, err, target)
	}
	return bin
}

// Helper runs helm with its own folders (cache, configuration, data) under a test's temp folder,
// so that it reads and writes nothing of the user's.
type Helper struct {
	tb   testing.TB
	bin  string
	env  []string
	home string
}

// New returns a Helper of the helm LIQO_HELM names, skipping tb when it is unset.
func New(tb testing.TB) *Helper {
	tb.Helper()
	return newHelper(tb, Helm(tb))
}

// NewHelm3 returns a Helper of the Helm 3 LIQO_HELM3 names, skipping tb when it is unset.
func NewHelm3(tb testing.TB) *Helper {
	tb.Helper()
	return newHelper(tb, helmFrom(tb, Helm3Env, "make helm"))
}

// newHelper returns a Helper running bin.
func newHelper(tb testing.TB, bin string) *Helper {
	tb.Helper()
	testenv.RequireLong(tb, "runs helm")
	// Not tb.TempDir(): its name comes from the test's, and helm splits --values at commas.
	home, err := os.MkdirTemp("", "liqo-helm-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(home) })
	env := append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"), "KUBECONFIG="+filepath.Join(home, "no-kubeconfig"))
	return &Helper{tb: tb, bin: bin, env: env, home: home}
}

// Run runs helm with args and returns its combined output.
func (h *Helper) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// ValuesFile writes values to a file for helm's --values.
func (h *Helper) ValuesFile(values map[string]any) string {
	h.tb.Helper()
	data, err := yaml.Marshal(values)
	if err != nil {
		h.tb.Fatal(err)
	}
	f, err := os.CreateTemp(h.home, "values-*.yaml")
	if err != nil {
		h.tb.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		h.tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		h.tb.Fatal(err)
	}
	return f.Name()
}

// Template renders the chart as release Release in namespace with values over values.yaml's
// (merged as helm merges them), hooks included, as `helm template` does.
func (h *Helper) Template(namespace string, values map[string]any) []*unstructured.Unstructured {
	h.tb.Helper()
	out, err := h.TryTemplate(namespace, values)
	if err != nil {
		h.tb.Fatal(err)
	}
	return Decode(h.tb, []byte(out))
}

// TryTemplate renders the chart as Template does, for values the chart may refuse: it returns
// helm's output and its error.
func (h *Helper) TryTemplate(namespace string, values map[string]any) (string, error) {
	h.tb.Helper()
	return h.Run(h.tb.Context(), "template", Release, Dir(h.tb), "--namespace", namespace, "--values", h.ValuesFile(values))
}

// Decode reads a multi-document YAML stream of objects.
func Decode(tb testing.TB, data []byte) []*unstructured.Unstructured {
	tb.Helper()
	docs, err := testenv.SplitYAML(data)
	if err != nil {
		tb.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(d, &u.Object); err != nil {
			tb.Fatalf("%v\n%s", err, d)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// IsHook says whether obj is a Helm hook.
func IsHook(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetAnnotations()[HookAnnotation]
	return ok
}

// Find returns the object of kind and name among objs, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
