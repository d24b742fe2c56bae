package podplacement_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/peerkit/terraform-provider-liqo/controllers/podplacement"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// startWebhook runs a manager serving the pod-placement webhook at a local URL, registered
// with the cluster's API server, until the returned stop or the test's end.
func startWebhook(t *testing.T, cl *testenv.Cluster) (stop func()) {
	t.Helper()
	ws := testenv.LocalWebhookServer(t, cl)
	return testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		ws.Register(podplacement.Path, &podplacement.Handler{Client: mgr.GetClient(), Decoder: admission.NewDecoder(mgr.GetScheme())})
		ws.AddMutating(podplacement.Configuration, podplacement.Path, podplacement.Webhook(consts.LiqoNamespace))
		return mgr.Add(ws)
	})
}

func tolerates(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.Tolerations, func(t corev1.Toleration) bool { return t == podplacement.Toleration })
}

// TestPlacementOnAServer: with the webhook registered on a real API server (called over
// HTTPS), pods of offloaded namespaces get the strategy's tolerations and affinity and keep
// the user's own; the scheduler puts a Remote pod on the virtual node (a KWOK node with the
// virtual-node label and taint; the controller manager lifts the not-ready taint the API
// server puts on new nodes) and a Local pod on the real node; pods of other namespaces
// are untouched; with the webhook down, only offloaded namespaces are blocked.
func TestPlacementOnAServer(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer", Scheduler: true, ControllerManager: true, Nodes: []testenv.NodeOptions{
		{Name: "local", Labels: map[string]string{"disk": "ssd"}},
		{Name: "vk-provider", Labels: map[string]string{consts.TypeLabel: consts.VirtualNodeType, consts.RemoteClusterIDLabel: "cl-provider",
			"region": "eu", "disk": "ssd"}, Taints: []corev1.Taint{vnode.Taint}},
	}})
	cl := env.Cluster("consumer")
	ctx := t.Context()
	offloaded := map[string]offv1beta1.PodOffloadingStrategyType{
		"remote": offv1beta1.RemotePodOffloadingStrategyType, "local": offv1beta1.LocalPodOffloadingStrategyType,
		"both": offv1beta1.LocalAndRemotePodOffloadingStrategyType, "elsewhere": offv1beta1.RemotePodOffloadingStrategyType,
	}
	clusterSelector := map[string]*corev1.NodeSelector{
		"elsewhere": {NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "region", Operator: corev1.NodeSelectorOpIn, Values: []string{"us"}}}}}},
		"remote": {NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "region", Operator: corev1.NodeSelectorOpIn, Values: []string{"eu"}}}}}},
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
		// Labelled, but without a NamespaceOffloading (stale label): untouched.
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "stale", Labels: map[string]string{consts.SchedulingEnabledLabel: "true"}}},
	}
	for ns, strategy := range offloaded {
		objs = append(objs,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{consts.SchedulingEnabledLabel: "true"}}},
			&offv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consts.NamespaceOffloadingName},
				Spec: offv1beta1.NamespaceOffloadingSpec{PodOffloadingStrategy: strategy, ClusterSelector: clusterSelector[ns]}})
	}
	for _, o := range objs {
		if err := cl.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	startWebhook(t, cl)
	testenv.Eventually(t, "the webhook to shape pods", 30*time.Second, func(ctx context.Context) bool {
		p := pod("remote", "probe", nil)
		return cl.Client.Create(ctx, p, client.DryRunAll) == nil && tolerates(p)
	})

	userAffinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}}}}
	pods := map[string]*corev1.Pod{
		"remote":    pod("remote", "web", userAffinity.DeepCopy()),
		"local":     pod("local", "web", userAffinity.DeepCopy()),
		"both":      pod("both", "web", userAffinity.DeepCopy()),
		"elsewhere": pod("elsewhere", "web", nil),
		"plain":     pod("plain", "web", nil),
		"stale":     pod("stale", "web", nil),
	}
	for _, p := range pods {
		if err := cl.Client.Create(ctx, p); err != nil {
			t.Fatalf("creating pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	for _, ns := range []string{"remote", "both", "elsewhere"} {
		if !tolerates(pods[ns]) {
			t.Errorf("%s pod does not tolerate the virtual-node taint: %v", ns, pods[ns].Spec.Tolerations)
		}
	}
	for _, ns := range []string{"local", "plain", "stale"} {
		if tolerates(pods[ns]) {
			t.Errorf("%s pod tolerates the virtual-node taint", ns)
		}
	}
	for _, ns := range []string{"plain", "stale"} {
		if pods[ns].Spec.Affinity != nil {
			t.Errorf("%s pod was given an affinity: %+v", ns, pods[ns].Spec.Affinity)
		}
	}
	// The user's ssd requirement is in every required term.
	for _, ns := range []string{"remote", "local", "both"} {
		terms := pods[ns].Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		for _, term := range terms {
			if !slices.ContainsFunc(term.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool { return r.Key == "disk" }) {
				t.Errorf("%s pod: term %+v lost the user's disk=ssd requirement", ns, term)
			}
		}
	}

	placed := func(ns string) string {
		t.Helper()
		var node string
		p := &corev1.Pod{}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, p); err != nil {
				return false, nil //nolint:nilerr // retried
			}
			node = p.Spec.NodeName
			return node != "", nil
		})
		if err != nil {
			t.Fatalf("pod %s/web not scheduled: %v; status %+v; spec %+v", ns, err, p.Status, p.Spec)
		}
		return node
	}
	if n := placed("remote"); n != "vk-provider" {
		t.Errorf("the Remote pod went to %s, want the virtual node", n)
	}
	if n := placed("local"); n != "local" {
		t.Errorf("the Local pod went to %s, want the real node", n)
	}
	if n := placed("plain"); n != "local" {
		t.Errorf("the plain pod went to %s", n)
	}
	// No virtual node matches region=us: the pod stays Pending, unschedulable.
	testenv.Eventually(t, "the pod of a namespace whose selector matches no virtual node to be unschedulable", 30*time.Second, func(ctx context.Context) bool {
		p := &corev1.Pod{}
		if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(pods["elsewhere"]), p); err != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
				return p.Spec.NodeName == ""
			}
		}
		return false
	})

	// A LocalAndRemote pod can go either way: both nodes pass its affinity and taints; which
	// one the scheduler picks is its own choice. Check it went to one of them.
	if n := placed("both"); n != "local" && n != "vk-provider" {
		t.Errorf("the LocalAndRemote pod went to %q", n)
	}
}

// TestWebhookDown: with the webhook registered but not answering, pods of namespaces that are
// not offloaded (and of system namespaces) are still created; pods of offloaded namespaces
// are refused rather than placed wrong.
func TestWebhookDown(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer"})
	cl := env.Cluster("consumer")
	ctx := t.Context()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "remote", Labels: map[string]string{consts.SchedulingEnabledLabel: "true"}}},
		&offv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: "remote", Name: consts.NamespaceOffloadingName},
			Spec: offv1beta1.NamespaceOffloadingSpec{PodOffloadingStrategy: offv1beta1.RemotePodOffloadingStrategyType}},
	} {
		if err := cl.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// Even a system namespace carrying the label is never matched.
	kubeSystem := &corev1.Namespace{}
	if err := cl.Client.Get(ctx, client.ObjectKey{Name: "kube-system"}, kubeSystem); err != nil {
		t.Fatal(err)
	}
	kubeSystem.Labels[consts.SchedulingEnabledLabel] = "true"
	if err := cl.Client.Update(ctx, kubeSystem); err != nil {
		t.Fatal(err)
	}
	stop := startWebhook(t, cl)
	testenv.Eventually(t, "the webhook to shape pods", 30*time.Second, func(ctx context.Context) bool {
		p := pod("remote", "probe", nil)
		return cl.Client.Create(ctx, p, client.DryRunAll) == nil && tolerates(p)
	})
	stop()
	for _, ns := range []string{"plain", "kube-system"} {
		if err := cl.Client.Create(ctx, pod(ns, "web", nil)); err != nil {
			t.Errorf("with the webhook down, a pod in %s was refused: %v", ns, err)
		}
	}
	if err := cl.Client.Create(ctx, pod("remote", "web", nil)); err == nil {
		t.Error("with the webhook down, a pod of an offloaded namespace was created unshaped")
	}
}

func pod(ns, name string, affinity *corev1.Affinity) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Affinity: affinity, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}
