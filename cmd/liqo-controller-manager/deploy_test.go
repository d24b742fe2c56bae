package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// renderChart renders the chart with `helm template` (deploy/chart; skips without LIQO_HELM),
// values over values.yaml's; hooks are left out unless withHooks.
func renderChart(t *testing.T, namespace string, values map[string]any, withHooks bool) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, o := range chart.New(t).Template(namespace, values) {
		if withHooks || !chart.IsHook(o) {
			objs = append(objs, o)
		}
	}
	return objs
}

// TestChartRunsTheManager: the chart's manifests pass a server-side dry run; installed for
// real, its RBAC lets the controller manager, running as the chart's ServiceAccount, set up
// the cluster and sync every informer (ready).
func TestChartRunsTheManager(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", SkipLiqoCRDs: true})
	cl := env.Cluster("a")
	ctx := t.Context()
	if err := cl.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}); err != nil {
		t.Fatal(err)
	}
	objs := renderChart(t, consts.LiqoNamespace, map[string]any{"clusterID": "cl-a", "podCIDR": "10.244.0.0/16",
		"defaultOffer": map[string]any{"spec": map[string]any{"resources": map[string]any{"cpu": "2"}}}}, false)
	kinds := map[string]bool{}
	defaultOffer := chartArg(objs, "--default-offer=") // passed to the manager run here
	for _, o := range objs {
		kinds[o.GetKind()] = true
		if err := cl.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("test"), client.DryRunAll, client.ForceOwnership); err != nil {
			t.Errorf("dry run of %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service"} {
		if !kinds[k] {
			t.Errorf("chart has no %s", k)
		}
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			continue // no image to run here: the test runs the manager in-process instead
		}
		if err := cl.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatalf("installing %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}

	path := serviceAccountKubeconfig(t, cl, consts.LiqoNamespace, "liqo-controller-manager")

	probe, hook := freeAddr(t), freeAddr(t)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	out := &testenv.SyncBuffer{}
	go func() {
		done <- run(rctx, []string{"--kubeconfig", path, "--cluster-id", "cl-a", "--pod-cidr", "10.244.0.0/16",
			"--health-probe-bind-address", probe, "--metrics-bind-address", "0",
			// The webhooks too (at a local URL: the manager runs here, not behind the Service).
			"--webhook-url", "https://" + hook, "--webhook-bind-address", hook, defaultOffer}, out)
	}()
	err := waitReady(ctx, probe, 90*time.Second, exitedFrom(done))
	if err != nil {
		t.Fatalf("manager as the chart's ServiceAccount not ready: %v\n%s", err, lastLines(out.String(), 30))
	}
	if strings.Contains(out.String(), "forbidden") {
		t.Errorf("the manager was refused something:\n%s", grep(out.String(), "forbidden"))
	}
	// It binds consumers to the peer ClusterRoles (the API server's escalation check), creates
	// and deletes their remote namespaces, and binds no other ClusterRole.
	sa := "system:serviceaccount:" + consts.LiqoNamespace + ":liqo-controller-manager"
	for _, c := range []struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		{authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "bind", Name: "liqo-remote-workload"}, true},
		{authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "bind", Name: "liqo-remote-controlplane"}, true},
		{authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "bind", Name: "liqo-virtual-kubelet-remote"}, true},
		{authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "bind", Name: "cluster-admin"}, false},
		{authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Verb: "create", Namespace: "any"}, true},
		{authorizationv1.ResourceAttributes{Resource: "namespaces", Verb: "create"}, true},
		{authorizationv1.ResourceAttributes{Resource: "namespaces", Verb: "delete", Name: "any"}, true},
		// The tethering controller: the NamespaceOffloadings of a tethered cluster, and its Events.
		{authorizationv1.ResourceAttributes{Group: "offloading.liqo.io", Resource: "namespaceoffloadings", Verb: "create", Namespace: "any"}, true},
		{authorizationv1.ResourceAttributes{Group: "offloading.liqo.io", Resource: "namespaceoffloadings", Verb: "update", Namespace: "any"}, true},
		{authorizationv1.ResourceAttributes{Group: "offloading.liqo.io", Resource: "namespaceoffloadings", Verb: "delete", Namespace: "any"}, true},
		{authorizationv1.ResourceAttributes{Group: "events.k8s.io", Resource: "events", Verb: "create", Namespace: "any"}, true},
		// The offer publication: Offers in every tenant namespace.
		{authorizationv1.ResourceAttributes{Group: "market.peerkit.io", Resource: "offers", Verb: "create", Namespace: "any"}, true},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: sa, ResourceAttributes: &c.attrs}}
		if err := cl.Client.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != c.want {
			t.Errorf("the chart's ServiceAccount may %s %s %s: %v, want %v", c.attrs.Verb, c.attrs.Resource, c.attrs.Name, sar.Status.Allowed, c.want)
		}
	}
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: "default"}, &marketv1alpha1.Offer{}); err != nil {
		t.Errorf("the chart's default offer (%s): %v", defaultOffer, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("manager stopped with %v", err)
	}
}

// chartArg is the argument of a container of the rendered chart that begins with prefix.
func chartArg(objs []*unstructured.Unstructured, prefix string) string {
	for _, o := range objs {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			m, _ := c.(map[string]any)
			args, _, _ := unstructured.NestedStringSlice(m, "args")
			for _, a := range args {
				if strings.HasPrefix(a, prefix) {
					return a
				}
			}
		}
	}
	return ""
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates to cl as ServiceAccount
// namespace/name, with a token of it.
func serviceAccountKubeconfig(t *testing.T, cl *testenv.Cluster, namespace, name string) string {
	t.Helper()
	tok, err := kubernetes.NewForConfigOrDie(cl.Config).CoreV1().ServiceAccounts(namespace).
		CreateToken(t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of ServiceAccount %s/%s: %v", namespace, name, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["a"] = &clientcmdapi.Cluster{Server: cl.Config.Host, CertificateAuthorityData: cl.Config.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["a"] = &clientcmdapi.Context{Cluster: "a", AuthInfo: "sa"}
	kc.CurrentContext = "a"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func grep(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestChartNamesAndVersion: the chart's version, appVersion and image tags are the project's
// version (internal/version), and its Deployment carries what upstream liqoctl finds the
// manager by: labels name and component controller-manager, a container of that name.
func TestChartNamesAndVersion(t *testing.T) {
	chartDir := chart.Dir(t)
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	chart := map[string]any{}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	if chart["version"] != version.Version || chart["appVersion"] != version.Version {
		t.Errorf("Chart.yaml version %v, appVersion %v; want %s (internal/version)", chart["version"], chart["appVersion"], version.Version)
	}
	objs := renderChart(t, consts.LiqoNamespace, map[string]any{"clusterID": "cl-a"}, true)
	var dep *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == consts.ControllerManagerDeployment {
			dep = o
		}
	}
	if dep == nil {
		t.Fatalf("the chart renders no Deployment %s", consts.ControllerManagerDeployment)
	}
	if l := dep.GetLabels(); l[consts.AppNameLabel] != consts.ControllerManagerApp || l[consts.AppComponentLabel] != consts.ControllerManagerApp {
		t.Errorf("Deployment %s, labels %v; want %s labelled %s=%s, %s=%s", dep.GetName(), l, consts.ControllerManagerDeployment,
			consts.AppNameLabel, consts.ControllerManagerApp, consts.AppComponentLabel, consts.ControllerManagerApp)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	found := false
	for _, c := range containers {
		m, _ := c.(map[string]any)
		if m["name"] == consts.ControllerManagerApp {
			found = true
			if m["image"] != version.ControllerManagerImage {
				t.Errorf("controller-manager image %v, want %s", m["image"], version.ControllerManagerImage)
			}
		}
	}
	if !found {
		t.Errorf("no container named %s in %v", consts.ControllerManagerApp, containers)
	}
	for _, img := range []string{"gatewayImage"} {
		values := map[string]any{}
		raw, _ := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
		if err := yaml.Unmarshal(raw, &values); err != nil {
			t.Fatal(err)
		}
		if s, _ := values[img].(string); !strings.HasSuffix(s, ":"+version.Version) {
			t.Errorf("values %s = %q, want tag %s", img, s, version.Version)
		}
	}
}
