package chart_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/api/crds"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestLint: helm lint, plain and strict, passes with the default values and with every
// alternative set.
func TestLint(t *testing.T) {
	h := chart.New(t)
	for _, args := range [][]string{
		{"lint", chart.Dir(t)},
		{"lint", "--strict", chart.Dir(t)},
		{"lint", "--strict", chart.Dir(t), "--set", "crds.manage=false,rbac.create=false,serviceAccount.create=false,serviceAccount.name=mine," +
			"webhook.certificate.secretName=liqo-webhook-tls,virtualKubelet.mode=deployment,uninstall.purge=true,nodeSelector.role=infra," +
			"resources.requests.cpu=100m"},
		{"lint", "--strict", chart.Dir(t), "--set", "uninstall.enabled=false"},
		{"lint", "--strict", chart.Dir(t), "--set", "lanDiscovery.enabled=true,lanDiscovery.interface=eth1,lanDiscovery.hostNetwork=true"},
		{"lint", "--strict", chart.Dir(t), "--set", "proxy.enabled=false"},
		{"lint", "--strict", chart.Dir(t), "--set", "fabric.enabled=false"},
		{"lint", "--strict", chart.Dir(t), "--set", "fabric.encap=vxlan,fabric.nodeSelector.role=worker,fabric.resources.requests.cpu=10m"},
		{"lint", "--strict", chart.Dir(t), "--set", "apiServerURL=https://api.example.com:6443,proxy.allow[0]=x.example.com:443,proxy.resources.requests.cpu=10m"},
	} {
		if out, err := h.Run(t.Context(), args...); err != nil {
			t.Error(err)
		} else if !strings.Contains(out, "0 chart(s) failed") {
			t.Errorf("helm %s:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestBadValues: values the manager would refuse fail the install, naming the value and the fix.
func TestBadValues(t *testing.T) {
	h := chart.New(t)
	for _, tc := range []struct {
		set, want string
	}{
		{"remoteNamespaces.podSecurity=Privileged", `remoteNamespaces.podSecurity "Privileged" is not a Pod Security level: give privileged, baseline or restricted`},
		{"remoteNamespaces.podSecurity=", `remoteNamespaces.podSecurity "" is not a Pod Security level`},
		{"fabric.encap=ipip", `fabric.encap "ipip" is not an encapsulation: give auto, geneve or vxlan`},
	} {
		out, err := h.Run(t.Context(), "template", chart.Release, chart.Dir(t), "--set", "clusterID=cl-a,podCIDR=10.244.0.0/16,"+tc.set)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("helm template --set %s: %v, want it refused saying %q:\n%s", tc.set, err, tc.want, out)
		}
	}
}

// TestInternalCIDROverlap: an internal CIDR overlapping a pod, the service or the external
// CIDR fails `helm template` (so `helm install` too), naming both values, both CIDRs and the
// fix; so does text that is no IPv4 network CIDR, naming the value; the defaults and CIDRs
// that only touch are accepted, and the manager gets the values as given.
func TestInternalCIDROverlap(t *testing.T) {
	h := chart.New(t)
	for _, tc := range chart.CIDRCases {
		out, err := h.TryTemplate("liqo", tc.Values())
		switch {
		case tc.Refuses() && (err == nil || !strings.Contains(out, tc.Refused)):
			t.Errorf("%s: helm template %v: %v, want it refused saying %q:\n%s", tc.Name, tc.Values(), err, tc.Refused, out)
		case !tc.Refuses() && err != nil:
			t.Errorf("%s: helm template %v refused: %v", tc.Name, tc.Values(), err)
		case !tc.Refuses():
			wantArgs(t, managerArgs(t, chart.Decode(t, []byte(out))), tc.ManagerArgs(), nil)
		}
	}
}

// valueSets are the value sets the chart is rendered with, and what each must render.
var valueSets = []struct {
	name   string
	values map[string]any
	check  func(t *testing.T, objs []*unstructured.Unstructured)
}{
	{"defaults", map[string]any{}, func(t *testing.T, objs []*unstructured.Unstructured) {
		args := managerArgs(t, objs)
		wantArgs(t, args, []string{"--manage-crds=true", "--webhook-service=liqo/liqo-webhook", "--enable-storage=true",
			"--virtual-storage-class-name=liqo", "--pod-cidr=10.244.0.0/16",
			"--api-server-proxy-namespace=liqo", "--remote-namespace-pod-security=baseline"},
			[]string{"--webhook-certificate-secret", "--remote-real-storage-class-name", "--lan-discovery"})
		if hn, _, _ := unstructured.NestedBool(deployment(t, objs).Object, "spec", "template", "spec", "hostNetwork"); hn {
			t.Error("the manager runs on the host's network by default")
		}
		if sc := chart.Find(objs, "StorageClass", "liqo"); sc == nil || sc.Object["provisioner"] != "liqo.io/storage" ||
			sc.Object["volumeBindingMode"] != "WaitForFirstConsumer" {
			t.Errorf("the virtual storage class: %v", sc)
		}
		wantVerbs(t, objs, "liqo-controller-manager", "customresourcedefinitions", "create", "update", "patch")
		// The EndpointSlices made of ShadowEndpointSlices (controllers/shadowendpointslice).
		wantVerbs(t, objs, "liqo-controller-manager", "endpointslices", "get", "list", "watch", "create", "update", "delete")
		// The hook may delete our CRDs, and no other.
		var want []string
		all, err := crds.All()
		if err != nil {
			t.Fatal(err)
		}
		for _, crd := range all {
			want = append(want, crd.Name)
		}
		got := resourceNames(t, objs, "liqo-uninstall", "customresourcedefinitions")
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("the uninstall hook may delete CRDs %v, want ours: %v", got, want)
		}
		hookJob := chart.Find(objs, "Job", "liqo-uninstall")
		if hookJob == nil || hookJob.GetAnnotations()[chart.HookAnnotation] != "pre-delete" {
			t.Fatalf("no pre-delete hook Job liqo-uninstall: %v", hookJob)
		}
		hookArgs, _, _ := unstructured.NestedStringSlice(firstContainer(t, hookJob), "args")
		wantArgs(t, hookArgs, []string{"uninstall", "--manage-crds=true", "--delete-namespace=false", "--purge=false",
			"--manager-deployment=liqo/liqo-controller-manager"}, nil)
		for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
			if o := chart.Find(objs, kind, "liqo-uninstall"); o == nil || !chart.IsHook(o) {
				t.Errorf("the uninstall hook's %s is not a hook: %v", kind, o)
			}
		}
		checkFabric(t, objs, "auto")
		checkProxy(t, objs)
		// Only the in-cluster API server, which the proxy allows by itself.
		wantArgs(t, proxyArgs(t, objs), []string{"--listen=:8118", "--health-probe-bind-address=:8081"}, []string{"--allow"})
	}},
	{"no API-server proxy", map[string]any{"proxy": map[string]any{"enabled": false}}, func(t *testing.T, objs []*unstructured.Unstructured) {
		for _, kind := range []string{"Deployment", "Service"} {
			if o := chart.Find(objs, kind, consts.APIServerProxyService); o != nil {
				t.Errorf("with proxy.enabled=false the chart renders %s %s", kind, o.GetName())
			}
		}
	}},
	{"no fabric agent", map[string]any{"fabric": map[string]any{"enabled": false}}, func(t *testing.T, objs []*unstructured.Unstructured) {
		for _, kind := range []string{"DaemonSet", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
			if o := chart.Find(objs, kind, "liqo-fabric"); o != nil {
				t.Errorf("with fabric.enabled=false the chart renders %s %s", kind, o.GetName())
			}
		}
	}},
	{"fabric agent on VXLAN", map[string]any{"fabric": map[string]any{"encap": "vxlan", "port": 6092}}, func(t *testing.T, objs []*unstructured.Unstructured) {
		checkFabric(t, objs, "vxlan")
		args, _, _ := unstructured.NestedStringSlice(firstContainer(t, chart.Find(objs, "DaemonSet", "liqo-fabric")), "args")
		wantArgs(t, args, []string{"--geneve-port=6092"}, nil)
	}},
	{"API server URL and extra proxy targets", map[string]any{"apiServerURL": "https://192.0.2.10:6443",
		"proxy": map[string]any{"allow": []any{"api.example.com:443"}, "image": "registry.example.com/liqo/liqo-proxy:1", "replicas": 2}},
		func(t *testing.T, objs []*unstructured.Unstructured) {
			checkProxy(t, objs)
			wantArgs(t, proxyArgs(t, objs), []string{"--allow=192.0.2.10:6443", "--allow=api.example.com:443"}, nil)
			dep := chart.Find(objs, "Deployment", consts.APIServerProxyService)
			if img := firstContainer(t, dep)["image"]; img != "registry.example.com/liqo/liqo-proxy:1" {
				t.Errorf("the proxy's image %v", img)
			}
			if n, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "replicas"); fmt.Sprint(n) != "2" {
				t.Errorf("the proxy's replicas %v", n)
			}
		}},
	{"API server URL without a port", map[string]any{"apiServerURL": "https://api.example.com"}, func(t *testing.T, objs []*unstructured.Unstructured) {
		wantArgs(t, proxyArgs(t, objs), []string{"--allow=api.example.com:443"}, nil)
	}},
	{"user webhook certificate", map[string]any{"webhook": map[string]any{"certificate": map[string]any{"secretName": "liqo-webhook-tls"}}},
		func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, managerArgs(t, objs), []string{"--webhook-certificate-secret=liqo/liqo-webhook-tls"}, nil)
		}},
	{"CRDs not managed", map[string]any{"crds": map[string]any{"manage": false}}, func(t *testing.T, objs []*unstructured.Unstructured) {
		wantArgs(t, managerArgs(t, objs), []string{"--manage-crds=false"}, nil)
		verbs := verbsOn(t, objs, "liqo-controller-manager", "customresourcedefinitions")
		if slices.ContainsFunc(verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
			t.Errorf("with crds.manage=false the manager may still %v CRDs", verbs)
		}
		if got := verbsOn(t, objs, "liqo-uninstall", "customresourcedefinitions"); len(got) > 0 {
			t.Errorf("with crds.manage=false the uninstall hook may still %v CRDs", got)
		}
	}},
	{"no RBAC, own ServiceAccount", map[string]any{"rbac": map[string]any{"create": false}, "serviceAccount": map[string]any{"create": false, "name": "mine"}},
		func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, o := range objs {
				if o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding" ||
					(o.GetKind() == "ServiceAccount" && o.GetName() == "liqo-controller-manager") {
					t.Errorf("rendered %s %s", o.GetKind(), o.GetName())
				}
			}
			if sa, _, _ := unstructured.NestedString(deployment(t, objs).Object, "spec", "template", "spec", "serviceAccountName"); sa != "mine" {
				t.Errorf("the manager runs as ServiceAccount %q, want mine", sa)
			}
		}},
	{"storage off, a real class", map[string]any{"storage": map[string]any{"enabled": false, "realStorageClassName": "fast"}},
		func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, managerArgs(t, objs), []string{"--enable-storage=false", "--remote-real-storage-class-name=fast"}, nil)
			for _, o := range objs {
				if o.GetKind() == "StorageClass" {
					t.Errorf("with storage.enabled=false the chart renders StorageClass %s", o.GetName())
				}
			}
		}},
	{"several pod CIDRs", map[string]any{"podCIDRs": []any{"10.250.0.0/16", "10.251.0.0/16"}}, func(t *testing.T, objs []*unstructured.Unstructured) {
		// podCIDRs wins over podCIDR (10.244.0.0/16 in every value set), as upstream's ipam.podCIDRs.
		wantArgs(t, managerArgs(t, objs), []string{"--pod-cidr=10.250.0.0/16", "--pod-cidr=10.251.0.0/16"}, []string{"--pod-cidr=10.244.0.0/16"})
	}},
	{"privileged remote namespaces", map[string]any{"remoteNamespaces": map[string]any{"podSecurity": "privileged"}}, func(t *testing.T, objs []*unstructured.Unstructured) {
		wantArgs(t, managerArgs(t, objs), []string{"--remote-namespace-pod-security=privileged"}, []string{"--remote-namespace-pod-security=baseline"})
	}},
	{"LAN discovery on the host's network", map[string]any{"lanDiscovery": map[string]any{"enabled": true, "interface": "eth1", "hostNetwork": true}},
		func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, managerArgs(t, objs), []string{"--lan-discovery=true", "--lan-discovery-interface=eth1"}, nil)
			spec, _, _ := unstructured.NestedMap(deployment(t, objs).Object, "spec", "template", "spec")
			if spec["hostNetwork"] != true || spec["dnsPolicy"] != "ClusterFirstWithHostNet" {
				t.Errorf("hostNetwork %v, dnsPolicy %v; want true, ClusterFirstWithHostNet", spec["hostNetwork"], spec["dnsPolicy"])
			}
		}},
	{"LAN discovery on the pod's network", map[string]any{"lanDiscovery": map[string]any{"enabled": true}},
		func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, managerArgs(t, objs), []string{"--lan-discovery=true"}, []string{"--lan-discovery-interface"})
			if hn, _, _ := unstructured.NestedBool(deployment(t, objs).Object, "spec", "template", "spec", "hostNetwork"); hn {
				t.Error("lanDiscovery.hostNetwork is false, yet the manager runs on the host's network")
			}
		}},
	{"virtual kubelets as Deployments", map[string]any{"virtualKubelet": map[string]any{"mode": "deployment"}}, func(t *testing.T, objs []*unstructured.Unstructured) {
		wantArgs(t, managerArgs(t, objs), []string{"--virtual-kubelet=deployment"}, nil)
	}},
	{"purge, pod scheduling and resources", map[string]any{"uninstall": map[string]any{"purge": true}, "pullPolicy": "Always",
		"nodeSelector": map[string]any{"role": "infra"}, "tolerations": []any{map[string]any{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}},
		"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}},
		func(t *testing.T, objs []*unstructured.Unstructured) {
			c := firstContainer(t, deployment(t, objs))
			if c["imagePullPolicy"] != "Always" {
				t.Errorf("imagePullPolicy %v", c["imagePullPolicy"])
			}
			if cpu, _, _ := unstructured.NestedString(c, "resources", "requests", "cpu"); cpu != "100m" {
				t.Errorf("resources %v", c["resources"])
			}
			for _, o := range []*unstructured.Unstructured{deployment(t, objs), chart.Find(objs, "Job", "liqo-uninstall"),
				chart.Find(objs, "Deployment", consts.APIServerProxyService)} {
				if sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "spec", "nodeSelector"); sel["role"] != "infra" {
					t.Errorf("%s %s: nodeSelector %v", o.GetKind(), o.GetName(), sel)
				}
				if tol, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "tolerations"); len(tol) != 1 {
					t.Errorf("%s %s: tolerations %v", o.GetKind(), o.GetName(), tol)
				}
			}
			hookArgs, _, _ := unstructured.NestedStringSlice(firstContainer(t, chart.Find(objs, "Job", "liqo-uninstall")), "args")
			wantArgs(t, hookArgs, []string{"--purge=true"}, nil)
			if verbs := verbsOn(t, objs, "liqo-uninstall", "namespaces"); !slices.Contains(verbs, "delete") {
				t.Errorf("with purge the hook may not delete tenant namespaces: %v", verbs)
			}
		}},
}

// TestTemplateServerDryRun: with every value set, every object `helm template` renders
// (hooks included) is accepted by a real API server (server-side apply, dry run, strict field
// validation), and renders what the values say.
func TestTemplateServerDryRun(t *testing.T) {
	h := chart.New(t)
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"})
	cl := env.Cluster("a")
	if err := cl.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}); err != nil {
		t.Fatal(err)
	}
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			values := map[string]any{"clusterID": "cl-a", "podCIDR": "10.244.0.0/16"}
			for k, v := range vs.values {
				values[k] = v
			}
			objs := h.Template(consts.LiqoNamespace, values)
			if len(objs) < 4 { // the Service, the Deployment, the hook's ServiceAccount and Job at least
				t.Fatalf("rendered only %d objects", len(objs))
			}
			for _, o := range objs {
				err := cl.Client.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("test"),
					client.DryRunAll, client.ForceOwnership)
				if err != nil {
					t.Errorf("the API server rejects %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
			vs.check(t, objs)
		})
	}
}

// TestInstallUpgradeUninstall: helm (Helm 4: server-side apply, kstatus waits) installs the chart
// into a cluster (KWOK plays the node: the manager's pod is Running without a container) and waits
// for it; an upgrade with a changed value reaches revision 2, applies the value and keeps the CRDs
// and a ForeignCluster made before it; helm uninstall (its pre-delete hook Job completed by KWOK:
// the uninstall subcommand itself is tested in cmd/liqo-controller-manager) leaves none of the
// chart's objects, hooks included. Then, in the same cluster, Helm 3 (LIQO_HELM3) does the same,
// and the chart's objects after its install and after its upgrade are Helm 4's.
func TestInstallUpgradeUninstall(t *testing.T) {
	h := chart.New(t)
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", ControllerManager: true, Scheduler: true, Nodes: []testenv.NodeOptions{{Name: "node-1"}}})
	cl := env.Cluster("a")
	helm4 := installUpgradeUninstall(t, h, cl)
	t.Run("helm3", func(t *testing.T) {
		helm3 := installUpgradeUninstall(t, chart.NewHelm3(t), cl)
		for i, step := range []string{"install", "upgrade"} {
			if len(helm4[i]) == 0 {
				t.Fatalf("no objects recorded after Helm 4's %s", step)
			}
			for _, d := range diffObjects(helm4[i], helm3[i]) {
				t.Errorf("after the %s, Helm 3 and Helm 4 differ: %s", step, d)
			}
		}
	})
}

// installUpgradeUninstall runs TestInstallUpgradeUninstall's steps with h in cl, and returns the
// chart's objects in the cluster after the install and after the upgrade (see chartObjects).
func installUpgradeUninstall(t *testing.T, h *chart.Helper, cl *testenv.Cluster) [2]map[string]string {
	t.Helper()
	ctx := t.Context()
	values := map[string]any{"clusterID": "cl-a", "podCIDR": "10.244.0.0/16"}
	helm := func(args ...string) string {
		t.Helper()
		start := time.Now()
		out, err := h.Run(ctx, append(args, "--kubeconfig", cl.KubeconfigPath, "--namespace", consts.LiqoNamespace)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("helm %s: %s", args[0], time.Since(start).Round(time.Millisecond))
		return out
	}
	var got [2]map[string]string

	helm("install", chart.Release, chart.Dir(t), "--create-namespace", "--values", h.ValuesFile(values), "--wait", "--timeout", "3m")
	dep := &appsv1.Deployment{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ControllerManagerDeployment}, dep); err != nil {
		t.Fatal(err)
	}
	if dep.Status.AvailableReplicas != 1 {
		t.Errorf("after helm install --wait, %d available replicas", dep.Status.AvailableReplicas)
	}
	got[0] = chartObjects(ctx, t, cl, h.Template(consts.LiqoNamespace, values))

	fc := &corev1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "remote"}, Spec: corev1beta1.ForeignClusterSpec{ClusterID: "remote"}}
	if err := cl.Client.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	values["sharePercent"] = 30
	helm("upgrade", chart.Release, chart.Dir(t), "--values", h.ValuesFile(values), "--wait", "--timeout", "3m")
	var history []struct {
		Revision int    `json:"revision"`
		Status   string `json:"status"`
	}
	if err := json.Unmarshal([]byte(helm("history", chart.Release, "--output", "json")), &history); err != nil {
		t.Fatal(err)
	}
	if n := len(history); n != 2 || history[n-1].Revision != 2 || history[n-1].Status != "deployed" {
		t.Errorf("release history after the upgrade: %+v, want revision 2 deployed", history)
	}
	if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--share-percent=30") {
		t.Errorf("the upgrade did not apply sharePercent: %v", dep.Spec.Template.Spec.Containers[0].Args)
	}
	kept := &corev1beta1.ForeignCluster{}
	if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(fc), kept); err != nil || kept.UID != fc.UID {
		t.Errorf("the ForeignCluster made before the upgrade is gone or replaced: %v", err)
	}
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		if err := cl.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, crd.DeepCopy()); err != nil {
			t.Errorf("CRD %s after the upgrade: %v", crd.Name, err)
		}
	}

	if err := cl.Client.Delete(ctx, fc); err != nil {
		t.Fatal(err)
	}
	rendered := h.Template(consts.LiqoNamespace, values)
	got[1] = chartObjects(ctx, t, cl, rendered)
	out := helm("uninstall", chart.Release, "--wait", "--timeout", "3m")
	if !strings.Contains(out, "uninstalled") {
		t.Errorf("helm uninstall said:\n%s", out)
	}
	testenv.Eventually(t, "every object of the chart gone", time.Minute, func(ctx context.Context) bool {
		return len(remaining(ctx, t, cl, rendered)) == 0
	})
	if left := remaining(ctx, t, cl, rendered); len(left) > 0 {
		t.Errorf("left after helm uninstall: %v", left)
	}
	pods := &corev1.PodList{}
	if err := cl.Client.List(ctx, pods, client.InNamespace(consts.LiqoNamespace)); err != nil || len(pods.Items) > 0 {
		t.Errorf("pods left in %s: %d, %v", consts.LiqoNamespace, len(pods.Items), err)
	}
	return got
}

// chartObjects reads the objects of objs that are not hooks from the cluster, by "Kind
// namespace/name", as JSON without what the API server and helm's way of applying decide rather
// than the chart: status, managed fields, UIDs, versions, timestamps, the Services' cluster IPs.
// A missing object is recorded as such.
func chartObjects(ctx context.Context, t *testing.T, cl *testenv.Cluster, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, o := range objs {
		if chart.IsHook(o) {
			continue
		}
		key := o.GetKind() + " " + client.ObjectKeyFromObject(o).String()
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			got[key] = "missing: " + err.Error()
			continue
		}
		delete(live.Object, "status")
		for _, f := range []string{"managedFields", "uid", "resourceVersion", "creationTimestamp", "generation"} {
			unstructured.RemoveNestedField(live.Object, "metadata", f)
		}
		unstructured.RemoveNestedField(live.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(live.Object, "spec", "clusterIPs")
		data, err := json.Marshal(live.Object)
		if err != nil {
			t.Fatal(err)
		}
		got[key] = string(data)
	}
	return got
}

// diffObjects lists the objects that differ between a and b (see chartObjects), with both.
func diffObjects(a, b map[string]string) []string {
	var diffs []string
	for key, av := range a {
		if bv, ok := b[key]; !ok {
			diffs = append(diffs, key+": only with Helm 4")
		} else if av != bv {
			diffs = append(diffs, fmt.Sprintf("%s:\n  Helm 4: %s\n  Helm 3: %s", key, av, bv))
		}
	}
	for key := range b {
		if _, ok := a[key]; !ok {
			diffs = append(diffs, key+": only with Helm 3")
		}
	}
	slices.Sort(diffs)
	return diffs
}

// remaining lists the objects of objs still in the cluster.
func remaining(ctx context.Context, t *testing.T, cl *testenv.Cluster, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var left []string
	for _, o := range objs {
		probe := &unstructured.Unstructured{}
		probe.SetGroupVersionKind(o.GroupVersionKind())
		key := client.ObjectKey{Name: o.GetName(), Namespace: o.GetNamespace()}
		if err := cl.Client.Get(ctx, key, probe); err == nil {
			left = append(left, o.GetKind()+" "+key.String())
		} else if !apierrors.IsNotFound(err) {
			t.Errorf("reading %s %s: %v", o.GetKind(), key, err)
		}
	}
	return left
}

func deployment(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	dep := chart.Find(objs, "Deployment", consts.ControllerManagerDeployment)
	if dep == nil {
		t.Fatal("no Deployment of the manager rendered")
	}
	return dep
}

func firstContainer(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatalf("%s %s has no container", o.GetKind(), o.GetName())
	}
	c, _ := cs[0].(map[string]any)
	return c
}

// checkProxy checks the API-server proxy's Deployment and Service: the Service (ClusterIP, port
// 8118 TCP named http, upstream's labels, which the manager finds it by) selects the proxy's
// pods and no other pod of the chart; the pods run as non-root without a ServiceAccount token,
// with health probes.
func checkProxy(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	svc, dep := chart.Find(objs, "Service", consts.APIServerProxyService), chart.Find(objs, "Deployment", consts.APIServerProxyService)
	if svc == nil || dep == nil {
		t.Fatalf("the API-server proxy: Service %v, Deployment %v", svc, dep)
	}
	for _, o := range []*unstructured.Unstructured{svc, dep} {
		if l := o.GetLabels(); l[consts.AppNameLabel] != consts.APIServerProxyApp || l["app.kubernetes.io/part-of"] != "liqo" {
			t.Errorf("%s %s labels %v", o.GetKind(), o.GetName(), l)
		}
	}
	if typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type"); typ != "ClusterIP" {
		t.Errorf("the proxy's Service type %q", typ)
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 {
		t.Fatalf("the proxy's Service ports %v", ports)
	}
	port, _ := ports[0].(map[string]any)
	if port["name"] != "http" || port["protocol"] != "TCP" || fmt.Sprint(port["port"]) != strconv.Itoa(consts.APIServerProxyPort) {
		t.Errorf("the proxy's Service port %v, want %d TCP named http", port, consts.APIServerProxyPort)
	}
	selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	podLabels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	if len(selector) == 0 || !labels.SelectorFromSet(selector).Matches(labels.Set(podLabels)) {
		t.Errorf("the proxy's Service selector %v does not select its pods %v", selector, podLabels)
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" && o.GetKind() != "Job" || o == dep {
			continue
		}
		other, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
		if labels.SelectorFromSet(selector).Matches(labels.Set(other)) {
			t.Errorf("the proxy's Service selects the pods of %s %s", o.GetKind(), o.GetName())
		}
	}
	spec, _, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec")
	if spec["automountServiceAccountToken"] != false {
		t.Errorf("the proxy's pods get a ServiceAccount token (automountServiceAccountToken %v)", spec["automountServiceAccountToken"])
	}
	if nonRoot, _, _ := unstructured.NestedBool(spec, "securityContext", "runAsNonRoot"); !nonRoot {
		t.Error("the proxy's pods may run as root")
	}
	if sc, _, _ := unstructured.NestedString(spec, "securityContext", "seccompProfile", "type"); sc != "RuntimeDefault" {
		t.Errorf("the proxy's seccomp profile %q", sc)
	}
	c := firstContainer(t, dep)
	if ro, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !ro {
		t.Error("the proxy's root filesystem is writable")
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		if _, ok := c[probe]; !ok {
			t.Errorf("the proxy has no %s", probe)
		}
	}
}

func proxyArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	dep := chart.Find(objs, "Deployment", consts.APIServerProxyService)
	if dep == nil {
		t.Fatal("no Deployment of the API-server proxy rendered")
	}
	args, _, _ := unstructured.NestedStringSlice(firstContainer(t, dep), "args")
	return args
}

func managerArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	args, _, _ := unstructured.NestedStringSlice(firstContainer(t, deployment(t, objs)), "args")
	return args
}

// wantArgs checks that args has every one of want and no argument starting with one of unwanted.
func wantArgs(t *testing.T, args, want, unwanted []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(args, w) {
			t.Errorf("no argument %s in %v", w, args)
		}
	}
	for _, u := range unwanted {
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, u) }) {
			t.Errorf("argument %s in %v", u, args)
		}
	}
}

// rules returns the rules of ClusterRole name on resource.
func rules(t *testing.T, objs []*unstructured.Unstructured, role, resource string) []map[string]any {
	t.Helper()
	cr := chart.Find(objs, "ClusterRole", role)
	if cr == nil {
		t.Fatalf("no ClusterRole %s rendered", role)
	}
	rs, _, _ := unstructured.NestedSlice(cr.Object, "rules")
	var out []map[string]any
	for _, r := range rs {
		m, _ := r.(map[string]any)
		res, _, _ := unstructured.NestedStringSlice(m, "resources")
		if slices.Contains(res, resource) {
			out = append(out, m)
		}
	}
	return out
}

func verbsOn(t *testing.T, objs []*unstructured.Unstructured, role, resource string) []string {
	t.Helper()
	var verbs []string
	for _, r := range rules(t, objs, role, resource) {
		v, _, _ := unstructured.NestedStringSlice(r, "verbs")
		verbs = append(verbs, v...)
	}
	return verbs
}

func wantVerbs(t *testing.T, objs []*unstructured.Unstructured, role, resource string, want ...string) {
	t.Helper()
	got := verbsOn(t, objs, role, resource)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("ClusterRole %s may not %s %s (only %v)", role, w, resource, got)
		}
	}
}

func resourceNames(t *testing.T, objs []*unstructured.Unstructured, role, resource string) []string {
	t.Helper()
	var names []string
	for _, r := range rules(t, objs, role, resource) {
		n, _, _ := unstructured.NestedStringSlice(r, "resourceNames")
		names = append(names, n...)
	}
	return names
}

// checkFabric checks the fabric agent's DaemonSet: host network, the node's name from the
// downward API, NET_ADMIN and NET_RAW but not privileged, the encapsulation encap, on every node
// (tolerating every taint); its ClusterRole reads the fabric's objects and writes only
// InternalNodes' status.
func checkFabric(t *testing.T, objs []*unstructured.Unstructured, encap string) {
	t.Helper()
	ds := chart.Find(objs, "DaemonSet", "liqo-fabric")
	if ds == nil {
		t.Fatal("no DaemonSet liqo-fabric rendered")
	}
	spec, _, _ := unstructured.NestedMap(ds.Object, "spec", "template", "spec")
	if spec["hostNetwork"] != true || spec["serviceAccountName"] != "liqo-fabric" {
		t.Errorf("the fabric agent's pod: hostNetwork %v, serviceAccountName %v", spec["hostNetwork"], spec["serviceAccountName"])
	}
	if aff := fmt.Sprint(spec["affinity"]); !strings.Contains(aff, consts.TypeLabel) || !strings.Contains(aff, consts.VirtualNodeType) {
		t.Errorf("the fabric agent may run on virtual nodes: affinity %v", aff)
	}
	if tol, _, _ := unstructured.NestedSlice(spec, "tolerations"); len(tol) != 1 || fmt.Sprint(tol[0]) != "map[operator:Exists]" {
		t.Errorf("the fabric agent's tolerations %v, want every taint tolerated", tol)
	}
	c := firstContainer(t, ds)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	wantArgs(t, args, []string{"--node-name=$(NODE_NAME)", "--namespace=liqo", "--encap=" + encap}, []string{"--config"})
	if env, _, _ := unstructured.NestedSlice(c, "env"); !strings.Contains(fmt.Sprint(env), "fieldPath:spec.nodeName") {
		t.Errorf("the fabric agent's NODE_NAME does not come from spec.nodeName: %v", env)
	}
	sc, _, _ := unstructured.NestedMap(c, "securityContext")
	caps, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "add")
	if sc["privileged"] == true || !slices.Equal(caps, []string{"NET_ADMIN", "NET_RAW"}) {
		t.Errorf("the fabric agent's securityContext %v, want NET_ADMIN and NET_RAW, not privileged", sc)
	}
	wantVerbs(t, objs, "liqo-fabric", "internalfabrics", "get", "list", "watch")
	wantVerbs(t, objs, "liqo-fabric", "internalnodes/status", "patch")
	for _, res := range []string{"internalnodes", "internalfabrics", "genevetunnels", "firewallconfigurations", "routeconfigurations", "nodes"} {
		if verbs := verbsOn(t, objs, "liqo-fabric", res); slices.ContainsFunc(verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
			t.Errorf("the fabric agent may %v %s; want read only", verbs, res)
		}
	}
}
