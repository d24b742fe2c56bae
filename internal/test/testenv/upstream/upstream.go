// Package upstream runs upstream Liqo v1.2.0's own components (its controller manager and CRD
// replicator) as processes against test-bed clusters (internal/test/testenv), for the mixed test bed
// of docs/upstream-testbed.md: one cluster runs upstream's controllers, the other ours. Networking
// is disabled, as `helm install --set networking.enabled=false` does.
//
// The binaries and upstream's chart come from LIQO_UPSTREAM_BIN (`make liqo-upstream` builds them
// into bin/liqo-upstream-v1.2.0 with tools/liqo-upstream/build.sh); without it, tests skip. The
// arguments each component gets are read from the chart as helm renders it (LIQO_HELM), so that
// they follow upstream's rather than a copy of them.
package upstream

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// BinEnv is the environment variable naming the folder tools/liqo-upstream/build.sh built.
const BinEnv = "LIQO_UPSTREAM_BIN"

// Namespace is the namespace upstream's components run for, as the chart's default install.
const Namespace = "liqo"

// Release is the Helm release name the chart is rendered as (its objects are named liqo-...).
const Release = "liqo"

// ControllerManager, Webhook, CRDReplicator and VirtualKubelet are the binaries in BinEnv's folder.
const (
	ControllerManager = "liqo-controller-manager"
	Webhook           = "webhook"
	CRDReplicator     = "crd-replicator"
	VirtualKubelet    = "virtual-kubelet"
)

// BinDir returns the folder LIQO_UPSTREAM_BIN names, and skips tb when it is unset.
func BinDir(tb testing.TB) string {
	tb.Helper()
	testenv.RequireLong(tb, "runs upstream Liqo's components")
	dir := os.Getenv(BinEnv)
	if dir == "" {
		tb.Skipf("%s is not set: upstream Liqo's components are not built (`make liqo-upstream`, then %s=bin/liqo-upstream-v1.2.0)", BinEnv, BinEnv)
	}
	if _, err := os.Stat(filepath.Join(dir, ControllerManager)); err != nil {
		tb.Fatalf("%s=%s: %v (build it with `make liqo-upstream`)", BinEnv, dir, err)
	}
	return dir
}

// ClusterOptions returns the options of a test-bed cluster named name for upstream's
// components: upstream's CRDs (from the chart beside the binaries) instead of ours.
func ClusterOptions(tb testing.TB, name string) testenv.ClusterOptions {
	tb.Helper()
	crds := filepath.Join(BinDir(tb), "chart", "charts", "liqo-crds", "crds")
	return testenv.ClusterOptions{Name: name, SkipLiqoCRDs: true, CRDPaths: []string{crds}}
}

// Render renders upstream's chart with networking disabled, clusterID as the cluster's ID and
// more values sets (each key=value, as helm's --set takes them), as `helm template` does (hooks
// included).
func Render(tb testing.TB, clusterID string, sets ...string) []*unstructured.Unstructured {
	tb.Helper()
	dir := filepath.Join(BinDir(tb), "chart")
	args := []string{"template", Release, dir, "--namespace", Namespace,
		"--set", "networking.enabled=false", "--set", "tag=" + Version, "--set", "discovery.config.clusterID=" + clusterID}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := chart.New(tb).Run(tb.Context(), args...)
	if err != nil {
		tb.Fatalf("rendering upstream's chart: %v", err)
	}
	return chart.Decode(tb, []byte(out))
}

// skippedKinds are the rendered kinds Install leaves out: workloads (the test bed runs them as
// processes, or not at all), what routes to them (Services, webhook configurations, an
// aggregated API nothing serves, which would break discovery) and the webhook's certificate
// Secret.
var skippedKinds = []string{"Deployment", "DaemonSet", "CronJob", "Job", "Service",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "APIService", "Secret"}

// Install creates, in cl, the namespace and the rendered objects upstream's components expect
// to find: the cluster-ID ConfigMap, the RBAC (ClusterRoles the controller manager binds to
// peers' identities among them), the default VkOptionsTemplate, the RuntimeClass and the
// StorageClass. Networking objects (networking.liqo.io, ipam.liqo.io) and skippedKinds are left
// out, as are hooks.
func Install(tb testing.TB, cl *testenv.Cluster, objs []*unstructured.Unstructured) {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := cl.Client.Create(tb.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatalf("creating namespace %s in cluster %s: %v", Namespace, cl.Name, err)
	}
	for _, o := range objs {
		group := o.GroupVersionKind().Group
		if chart.IsHook(o) || slices.Contains(skippedKinds, o.GetKind()) ||
			strings.HasPrefix(group, "networking.liqo.io") || strings.HasPrefix(group, "ipam.liqo.io") {
			continue
		}
		namespaced, err := cl.Client.IsObjectNamespaced(o)
		if err != nil {
			tb.Fatalf("upstream %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		if namespaced && o.GetNamespace() == "" {
			o.SetNamespace(Namespace)
		}
		if err := cl.Client.Create(tb.Context(), o); err != nil {
			tb.Fatalf("creating upstream %s %s in cluster %s: %v", o.GetKind(), o.GetName(), cl.Name, err)
		}
	}
}

// Args returns the arguments upstream's chart gives the first container of Deployment
// deployment among objs, with the environment it takes from the pod resolved: $(CLUSTER_ID)
// (the cluster-ID ConfigMap's) and $(POD_NAMESPACE) (Namespace).
func Args(tb testing.TB, objs []*unstructured.Unstructured, deployment string) []string {
	tb.Helper()
	d := chart.Find(objs, "Deployment", deployment)
	cm := chart.Find(objs, "ConfigMap", "liqo-clusterid-configmap")
	if d == nil || cm == nil {
		tb.Fatalf("upstream's chart renders no Deployment %s or no cluster-ID ConfigMap", deployment)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		tb.Fatalf("upstream Deployment %s: no containers", deployment)
	}
	args, _, err := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if err != nil {
		tb.Fatalf("upstream Deployment %s: args: %v", deployment, err)
	}
	id, _, _ := unstructured.NestedString(cm.Object, "data", "CLUSTER_ID")
	r := strings.NewReplacer("$(CLUSTER_ID)", id, "$(POD_NAMESPACE)", Namespace)
	for i, a := range args {
		args[i] = r.Replace(a)
	}
	return args
}
