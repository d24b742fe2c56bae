package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/grantenforcement"
	"github.com/peerkit/terraform-provider-liqo/controllers/podplacement"
	"github.com/peerkit/terraform-provider-liqo/controllers/virtualnode"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/api/crds"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/webhookserver"
)

// releaseNamespace is where the tests put the chart's objects: not liqo, so that the
// uninstall deletes the liqo namespace too.
const releaseNamespace = "liqo-system"

// runManager runs the manager in-process as admin until it is ready and returns its stop.
func runManager(t *testing.T, cl *testenv.Cluster, extra ...string) (stop func()) {
	t.Helper()
	probe, hook := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	out := &testenv.SyncBuffer{}
	args := append([]string{"--kubeconfig", cl.KubeconfigPath, "--cluster-id", "cl-a", "--pod-cidr", "10.244.0.0/16",
		"--health-probe-bind-address", probe, "--metrics-bind-address", "0",
		"--webhook-url", "https://" + hook, "--webhook-bind-address", hook}, extra...)
	go func() { done <- run(ctx, args, out) }()
	if err := waitReady(ctx, probe, 90*time.Second, exitedFrom(done)); err != nil {
		cancel()
		t.Fatalf("manager not ready: %v\n%s", err, lastLines(out.String(), 30))
	}
	// The webhook configurations are written when the webhook server starts.
	testenv.Eventually(t, "the webhook configurations", 30*time.Second, func(ctx context.Context) bool {
		return cl.Client.Get(ctx, client.ObjectKey{Name: grantenforcement.Configuration}, &admissionregistrationv1.ValidatingWebhookConfiguration{}) == nil
	})
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
	}
}

// hookKubeconfig installs the chart's uninstall hook's ServiceAccount and RBAC, rendered with
// values, and returns a kubeconfig of that ServiceAccount: the uninstall runs with the rights
// the chart gives it.
func hookKubeconfig(t *testing.T, cl *testenv.Cluster, namespace string, values map[string]any) string {
	t.Helper()
	ctx := t.Context()
	if err := cl.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	found := 0
	for _, o := range renderChart(t, namespace, values, true) {
		if o.GetName() != "liqo-uninstall" || o.GetKind() == "Job" {
			continue
		}
		found++
		if err := cl.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatalf("installing the hook's %s: %v", o.GetKind(), err)
		}
	}
	if found != 3 {
		t.Fatalf("the chart renders %d of the uninstall hook's ServiceAccount, ClusterRole and ClusterRoleBinding", found)
	}
	return serviceAccountKubeconfig(t, cl, namespace, "liqo-uninstall")
}

// managerDeployment stands for the chart's Deployment of the manager (its pods run on a KWOK
// node: no container), for the uninstall to scale it down.
func managerDeployment(t *testing.T, cl *testenv.Cluster) {
	t.Helper()
	labels := map[string]string{consts.AppNameLabel: consts.ControllerManagerApp, consts.AppComponentLabel: consts.ControllerManagerApp}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: consts.ControllerManagerDeployment},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: consts.ControllerManagerApp, Image: "liqo-controller-manager"}}}}},
	}
	if err := cl.Client.Create(t.Context(), dep); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the stand-in manager pod Running", time.Minute, func(ctx context.Context) bool {
		pods := &corev1.PodList{}
		return cl.Client.List(ctx, pods, client.InNamespace(releaseNamespace), client.MatchingLabels(labels)) == nil &&
			len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodRunning
	})
}

// leftovers lists what of the manager's is still in the cluster (a namespace still
// Terminating counts), apart from the CRDs when keepCRDs and the liqo namespace when keepNamespace.
func leftovers(t *testing.T, cl *testenv.Cluster, keepCRDs, keepNamespace bool) []string {
	t.Helper()
	ctx := t.Context()
	var left []string
	crdList := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := cl.Client.List(ctx, crdList); err != nil {
		t.Fatal(err)
	}
	for _, crd := range crdList.Items {
		if strings.HasSuffix(crd.Spec.Group, "liqo.io") && !keepCRDs {
			left = append(left, "CRD "+crd.Name)
		}
	}
	for _, obj := range []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: podplacement.Configuration}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: grantenforcement.Configuration}},
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: consts.ReflectedSecretsPolicy}},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: consts.ReflectedSecretsPolicy}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusteridentity.RemoteControlPlaneClusterRole}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusteridentity.RemoteWorkloadClusterRole}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: virtualnode.KubeletClusterRole}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: consts.ClusterIDConfigMap}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: consts.SigningKeySecret}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: webhookserver.DefaultSecretName}},
	} {
		if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err == nil {
			left = append(left, kindName(cl, obj))
		} else if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	if !keepNamespace {
		ns := &corev1.Namespace{}
		if err := cl.Client.Get(ctx, client.ObjectKey{Name: consts.LiqoNamespace}, ns); err == nil {
			left = append(left, "Namespace "+ns.Name+" ("+string(ns.Status.Phase)+")")
		}
	}
	if keepCRDs {
		// The manager's own objects of our kinds, in the liqo namespace.
		for _, gvk := range mustKinds(t) {
			if !ownKind(gvk) {
				continue
			}
			u := &uninstaller{c: cl.Client}
			items, err := u.list(ctx, gvk)
			if err != nil {
				t.Fatal(err)
			}
			for i := range items {
				left = append(left, gvk.Kind+" "+client.ObjectKeyFromObject(&items[i]).String())
			}
		}
	}
	return left
}

// kindName is "Kind namespace/name" of obj.
func kindName(cl *testenv.Cluster, obj client.Object) string {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := apiutil.GVKForObject(obj, cl.Client.Scheme()); err == nil {
		kind = gvk.Kind
	}
	return kind + " " + client.ObjectKeyFromObject(obj).String()
}

func mustKinds(t *testing.T) []schema.GroupVersionKind {
	t.Helper()
	kinds, err := ourKinds()
	if err != nil {
		t.Fatal(err)
	}
	return kinds
}

// TestUninstall: the uninstall subcommand, run with the rights the chart's hook gets, refuses
// while a peering exists and names it, deleting nothing; without peerings it stops the
// manager's Deployment and removes everything the manager made (CRDs, webhook configurations,
// the admission policy, the peer ClusterRoles, the liqo namespace, gone rather than
// Terminating); with --purge it removes a peering too (finalizers, tenant namespace, virtual
// node); with the CRDs not the manager's and liqo the release namespace, it keeps both and
// removes the manager's objects in them.
func TestUninstall(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", SkipLiqoCRDs: true, ControllerManager: true, Scheduler: true,
		Nodes: []testenv.NodeOptions{{Name: "node-1"}}})
	cl := env.Cluster("a")
	ctx := t.Context()

	stop := runManager(t, cl)
	// The ClusterRole of virtual kubelets run as Deployments, as the manager keeps it.
	if err := cl.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: virtualnode.KubeletClusterRole,
		Labels: map[string]string{managedByLabel: managedBy}}}); err != nil {
		t.Fatal(err)
	}
	stop()
	kc := hookKubeconfig(t, cl, releaseNamespace, map[string]any{})
	managerDeployment(t, cl)
	if left := leftovers(t, cl, false, false); len(left) < 10 {
		t.Fatalf("the manager made only %v", left)
	}

	fc := &corev1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "remote"}, Spec: corev1beta1.ForeignClusterSpec{ClusterID: "remote"}}
	if err := cl.Client.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	out := &testenv.SyncBuffer{}
	args := []string{uninstallCommand, "--kubeconfig", kc, "--manager-deployment", releaseNamespace + "/" + consts.ControllerManagerDeployment, "--timeout", "2m"}
	err := run(ctx, args, out)
	if err == nil || !strings.Contains(err.Error(), "ForeignClusters remote") || !strings.Contains(err.Error(), "--purge") {
		t.Fatalf("with a peering, uninstall returned %v, want a refusal naming ForeignCluster remote and --purge\n%s", err, out)
	}
	if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
		t.Errorf("the refused uninstall touched the peering: %v", err)
	}
	dep := &appsv1.Deployment{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: consts.ControllerManagerDeployment}, dep); err != nil || *dep.Spec.Replicas != 1 {
		t.Errorf("the refused uninstall scaled the manager: %v", err)
	}
	if left := leftovers(t, cl, false, false); len(left) < 10 {
		t.Errorf("the refused uninstall deleted things; left only %v", left)
	}

	if err := cl.Client.Delete(ctx, fc); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := run(ctx, args, out); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	t.Logf("uninstall took %s", time.Since(start).Round(time.Millisecond))
	if left := leftovers(t, cl, false, false); len(left) > 0 {
		t.Errorf("left after uninstall: %v\n%s", left, out)
	}
	if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil || *dep.Spec.Replicas != 0 {
		t.Errorf("the manager's Deployment was not scaled to zero: %v", err)
	}
	pods := &corev1.PodList{}
	if err := cl.Client.List(ctx, pods, client.InNamespace(releaseNamespace)); err != nil || len(pods.Items) > 0 {
		t.Errorf("the manager's pods are still there: %d, %v", len(pods.Items), err)
	}

	t.Run("purge", func(t *testing.T) {
		stop := runManager(t, cl)
		stop()
		kc := hookKubeconfig(t, cl, releaseNamespace, map[string]any{"uninstall": map[string]any{"purge": true}})
		fc := &corev1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "remote", Finalizers: []string{"liqo.io/test"}},
			Spec: corev1beta1.ForeignClusterSpec{ClusterID: "remote"}}
		tenantNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.TenantNamespacePrefix + "remote",
			Labels: map[string]string{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: "remote"}}}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "liqo-remote", Labels: map[string]string{consts.TypeLabel: consts.VirtualNodeType}}}
		for _, o := range []client.Object{fc, tenantNS, node} {
			if err := cl.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		out := &testenv.SyncBuffer{}
		if err := run(ctx, []string{uninstallCommand, "--kubeconfig", kc, "--purge", "--timeout", "2m"}, out); err != nil {
			t.Fatalf("uninstall --purge: %v\n%s", err, out)
		}
		if left := leftovers(t, cl, false, false); len(left) > 0 {
			t.Errorf("left after uninstall --purge: %v\n%s", left, out)
		}
		for _, o := range []client.Object{tenantNS, node} {
			if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
				t.Errorf("%s still there after --purge: %v", kindName(cl, o), err)
			}
		}
	})

	t.Run("CRDs not managed, liqo the release namespace", func(t *testing.T) {
		// Without our CRDs, a manager that does not manage them refuses to start, and says why.
		err := run(ctx, []string{"--kubeconfig", cl.KubeconfigPath, "--cluster-id", "cl-a", "--manage-crds=false",
			"--health-probe-bind-address", "0", "--metrics-bind-address", "0"}, &testenv.SyncBuffer{})
		if err == nil || !strings.Contains(err.Error(), "is not installed, and this manager does not install CRDs (--manage-crds=false") {
			t.Fatalf("manager with --manage-crds=false and no CRDs: %v", err)
		}
		if err := crds.Install(ctx, cl.Client); err != nil {
			t.Fatal(err)
		}
		stop := runManager(t, cl, "--manage-crds=false")
		stop()
		values := map[string]any{"crds": map[string]any{"manage": false}}
		kc := hookKubeconfig(t, cl, consts.LiqoNamespace, values)
		out := &testenv.SyncBuffer{}
		if err := run(ctx, []string{uninstallCommand, "--kubeconfig", kc, "--manage-crds=false", "--delete-namespace=false", "--timeout", "2m"}, out); err != nil {
			t.Fatalf("uninstall: %v\n%s", err, out)
		}
		if left := leftovers(t, cl, true, true); len(left) > 0 {
			t.Errorf("left after uninstall: %v\n%s", left, out)
		}
		all, err := crds.All()
		if err != nil {
			t.Fatal(err)
		}
		for _, crd := range all {
			if err := cl.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
				t.Errorf("CRD %s, not the manager's, was not kept: %v", crd.Name, err)
			}
		}
		if err := cl.Client.Get(ctx, client.ObjectKey{Name: consts.LiqoNamespace}, &corev1.Namespace{}); err != nil {
			t.Errorf("namespace %s, the release's, was not kept: %v", consts.LiqoNamespace, err)
		}
	})
}
