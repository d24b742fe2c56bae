package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/tethering"
)

// TestTethered runs examples/tethered on the sandbox, the sandbox's consumer being the home
// cluster and its provider the foreign one: refused while the home offers resources to another
// cluster (seed 004's rule); then applied, the home's namespaces (one from before, one made
// after) are offloaded with the Remote strategy and their Deployments' pods run on the foreign
// cluster, the foreign cluster's slice on the home is granted all the home's nodes, plans are
// quiet and imports plan nothing more; mode = "autonomous" brings every pod home (each
// Deployment's replicas Running on the home's own node) and removes the tethering's objects;
// destroy leaves nothing.
func TestTethered(t *testing.T) {
	r := startSandbox(t, 2)
	ctx := t.Context()
	home := r.clients["consumer"]
	args := func(mode string) []string {
		return r.tfArgs("tethered", "home_kubeconfig="+filepath.Join(r.state, "consumer.kubeconfig"),
			"foreign_kubeconfig="+filepath.Join(r.state, "provider.kubeconfig"), "mode="+mode)
	}
	before := webDeployment(t, home, "laptop-before", 2)

	// Seed 004's rule: not while the home offers resources to another cluster.
	other := fakeOtherConsumer(t, home)
	out, _, code := r.tf(t, "tethered", append([]string{"apply", "-auto-approve"}, args("tethered")...)...)
	if code == 0 || !strings.Contains(oneLine(out), "offers resources to other-consumer") {
		t.Fatalf("apply while the home offers resources to another cluster: exit %d, want a refusal naming other-consumer\n%s", code, out)
	}
	if err := home.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	otherNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other.Namespace}}
	if err := home.Delete(ctx, otherNS); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyOK(t, "the other consumer's tenant namespace gone", time.Minute, func() error {
		switch err := home.Get(ctx, client.ObjectKeyFromObject(otherNS), otherNS); {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("namespace %s still there (%s)", otherNS.Name, otherNS.Status.Phase)
	})

	start := time.Now()
	r.mustTF(t, "tethered", append([]string{"apply", "-auto-approve"}, args("tethered")...)...)
	t.Logf("examples/tethered: apply after the refusal to every namespace offloaded %s", time.Since(start).Round(time.Millisecond))
	vnode := r.virtualNodeOf(t, "consumer", "provider")
	// Pods running before stay until they are replaced (as `kubectl rollout restart` does).
	if err := home.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(before.Namespace)); err != nil {
		t.Fatal(err)
	}
	r.expectOnNode(t, home, before, vnode, "tethered")
	// A namespace made once tethered: offloaded by the tethering controller; its pods go to the
	// foreign cluster once its offloading is Ready (before, they would stay home).
	if err := home.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "laptop-after"}}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	testenv.EventuallyOK(t, "the namespace made once tethered offloaded", time.Minute, func() error {
		left, err := tethering.NotOffloaded(ctx, home, consts.LiqoNamespace)
		if err == nil && len(left) > 0 {
			err = fmt.Errorf("not offloaded: %v", left)
		}
		return err
	})
	t.Logf("a namespace made once tethered: offloaded (Ready) %s after its creation", time.Since(start).Round(time.Millisecond))
	after := webDeployment(t, home, "laptop-after", 3)
	r.expectOnNode(t, home, after, vnode, "tethered")
	for _, ns := range []string{"kube-system", consts.LiqoNamespace} {
		if err := home.Get(ctx, client.ObjectKey{Namespace: ns, Name: consts.NamespaceOffloadingName}, &offv1beta1.NamespaceOffloading{}); err == nil {
			t.Errorf("namespace %s is offloaded: a tethered cluster keeps Kubernetes' and Liqo's namespaces home", ns)
		}
	}
	r.expectTetheredGrant(t, home)
	r.expectQuietPlans(t, "tethered", args("tethered")...)
	r.expectImportsQuiet(t, "tethered", args("tethered"), nil)

	start = time.Now()
	r.mustTF(t, "tethered", append([]string{"apply", "-auto-approve"}, args("autonomous")...)...)
	t.Logf("examples/tethered: mode = autonomous to every workload home %s", time.Since(start).Round(time.Millisecond))
	if left, err := tethering.NotHome(ctx, home, r.clusterID(t, "provider")); err != nil || len(left) > 0 {
		t.Errorf("after mode = autonomous: left on the foreign cluster %v, %v", left, err)
	}
	for _, dep := range []*appsv1.Deployment{before, after} {
		r.expectOnNode(t, home, dep, "", "autonomous")
	}
	r.expectQuietPlans(t, "tethered", args("autonomous")...)
	for _, ns := range []string{before.Namespace, after.Namespace} {
		if err := home.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	r.mustTF(t, "tethered", append([]string{"destroy", "-auto-approve"}, args("autonomous")...)...)
	r.expectNothingLeft(t)
}

// webDeployment makes namespace ns on c (unless it exists) with Deployment "web" of
// replicas in it.
func webDeployment(t *testing.T, c client.Client, ns string, replicas int32) *appsv1.Deployment {
	t.Helper()
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web"}}}}}}
	if err := c.Create(t.Context(), dep); err != nil {
		t.Fatal(err)
	}
	return dep
}

// fakeOtherConsumer makes on c the Tenant a peering of another consumer would make there.
func fakeOtherConsumer(t *testing.T, c client.Client) *authv1beta1.Tenant {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-other-consumer"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(t.Context()), ns) })
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "other-consumer"},
		Spec: authv1beta1.TenantSpec{ClusterID: "other-consumer"}}
	if err := c.Create(t.Context(), tenant); err != nil {
		t.Fatal(err)
	}
	return tenant
}

// virtualNodeOf is the name of the virtual node of cluster remote on cluster, failing when
// there is not exactly one.
func (r *sandboxRun) virtualNodeOf(t *testing.T, cluster, remote string) string {
	t.Helper()
	var nodes corev1.NodeList
	if err := r.clients[cluster].List(t.Context(), &nodes, client.MatchingLabels{consts.TypeLabel: consts.VirtualNodeType,
		consts.RemoteClusterIDLabel: r.clusterID(t, remote)}); err != nil || len(nodes.Items) != 1 {
		t.Fatalf("virtual nodes of %s on %s: %d, %v; want one", remote, cluster, len(nodes.Items), err)
	}
	return nodes.Items[0].Name
}

// clusterID is the ID of the named sandbox cluster.
func (r *sandboxRun) clusterID(t *testing.T, cluster string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := r.clients[cluster].Get(t.Context(), client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ClusterIDConfigMap}, cm); err != nil {
		t.Fatalf("the cluster ID of %s: %v", cluster, err)
	}
	return cm.Data[consts.ClusterIDKey]
}

// expectOnNode waits until every replica of dep is Running on node ("": on a node that is not
// virtual), one pod per replica and no other pod of it.
func (r *sandboxRun) expectOnNode(t *testing.T, c client.Client, dep *appsv1.Deployment, node, when string) {
	t.Helper()
	where := "the virtual node " + node
	if node == "" {
		where = "the home's own nodes"
	}
	var last string
	testenv.EventuallyOK(t, fmt.Sprintf("%s: every pod of %s/%s Running on %s", when, dep.Namespace, dep.Name, where), 2*time.Minute, func() error {
		var pods corev1.PodList
		if err := c.List(t.Context(), &pods, client.InNamespace(dep.Namespace), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return err
		}
		var seen []string
		ok := 0
		for _, p := range pods.Items {
			n := &corev1.Node{}
			virtual := c.Get(t.Context(), client.ObjectKey{Name: p.Spec.NodeName}, n) == nil && n.Labels[consts.TypeLabel] == consts.VirtualNodeType
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && (node == "" && !virtual || node != "" && p.Spec.NodeName == node) {
				ok++
			}
			seen = append(seen, fmt.Sprintf("%s on %q %s", p.Name, p.Spec.NodeName, p.Status.Phase))
		}
		slices.Sort(seen)
		last = strings.Join(seen, ", ")
		if ok != int(*dep.Spec.Replicas) || len(pods.Items) != ok {
			return fmt.Errorf("%d of %d replicas Running there, %d pods: %s", ok, *dep.Spec.Replicas, len(pods.Items), last)
		}
		return nil
	})
	t.Logf("%s: %s/%s: %s", when, dep.Namespace, dep.Name, last)
}

// expectTetheredGrant checks that the foreign cluster's slice on the home is granted all the
// home's real nodes' allocatable CPU and memory (the sandbox shares 100 %).
func (r *sandboxRun) expectTetheredGrant(t *testing.T, home client.Client) {
	t.Helper()
	var nodes corev1.NodeList
	if err := home.List(t.Context(), &nodes); err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceList{}
	for _, n := range nodes.Items {
		if n.Labels[consts.TypeLabel] == consts.VirtualNodeType {
			continue
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			q := want[name]
			q.Add(n.Status.Allocatable[name])
			want[name] = q
		}
	}
	var sliceList authv1beta1.ResourceSliceList
	if err := home.List(t.Context(), &sliceList); err != nil {
		t.Fatal(err)
	}
	for _, s := range sliceList.Items {
		if string(s.Spec.Class) != consts.TetheredSliceClass {
			continue
		}
		for name, q := range want {
			if got := s.Status.Resources[name]; got.Cmp(q) != 0 {
				t.Errorf("tethered slice %s/%s: %s granted %s, want all the home's %s", s.Namespace, s.Name, name, got.String(), q.String())
			}
		}
		granted := make([]string, 0, len(s.Status.Resources))
		for name, q := range s.Status.Resources {
			granted = append(granted, string(name)+"="+q.String())
		}
		slices.Sort(granted)
		t.Logf("tethered slice %s/%s granted %s", s.Namespace, s.Name, strings.Join(granted, " "))
		return
	}
	t.Errorf("no slice of class %s on the foreign cluster", consts.TetheredSliceClass)
}
