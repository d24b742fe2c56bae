package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity/podsecuritytest"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// runProviderManager runs the controller manager's entry point against cl with the webhooks
// served at a local address, until stop (or the test's end); it returns once the manager is ready.
func runProviderManager(t *testing.T, cl *testenv.Cluster, args ...string) (stop func()) {
	t.Helper()
	probe, hook := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	args = append([]string{"--kubeconfig", cl.KubeconfigPath, "--cluster-id", "cl-provider", "--pod-cidr", "10.100.0.0/16",
		"--share", "cpu=4,memory=8Gi,pods=110", "--health-probe-bind-address", probe, "--metrics-bind-address", "0",
		"--webhook-url", "https://" + hook, "--webhook-bind-address", hook}, args...)
	go func() { done <- run(ctx, args, io.Discard) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	}
	t.Cleanup(stop)
	if err := waitReady(t.Context(), probe, 2*time.Minute, exitedFrom(done)); err != nil {
		t.Fatalf("controller manager not ready: %v", err)
	}
	return stop
}

// TestPodSecurityOfRemoteNamespaces: the attack, end to end, on a provider running the
// real controller manager with its webhooks. A consumer with a Tenant, a granted slice and an
// offloaded namespace gets its remote namespace labelled baseline (the default); its own
// identity is refused the ShadowPod of a privileged pod with the node's / mounted, naming both
// fields, and no pod is made; the API server itself refuses such a pod in that namespace; a
// pod within baseline runs. Privileged granted to this consumer (its Tenant's annotation, as
// liqo_tenant and liqo_peering set it) relabels the namespace and the attack's pod is created
// and runs; without it the default is back. A manager restarted with
// --remote-namespace-pod-security=privileged relabels the namespace and runs it too.
func TestPodSecurityOfRemoteNamespaces(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider", Scheduler: true, ControllerManager: true,
		Nodes: []testenv.NodeOptions{{Name: "node-1", CPU: "8", Memory: "16Gi"}}})
	prov := env.Cluster("provider")
	ctx := t.Context()
	stop := runProviderManager(t, prov)

	const consumer, tenantNS, remoteNS = "cl-consumer", "liqo-tenant-cl-consumer", "app-cl-consumer"
	tn := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: consumer}, Spec: authv1beta1.TenantSpec{
		ClusterID: consumer, AuthzPolicy: authv1beta1.TolerateNoHandshake, TenantCondition: authv1beta1.TenantConditionActive}}
	cid, pid := corev1beta1.ClusterID(consumer), corev1beta1.ClusterID("cl-provider")
	slice := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "cl-provider",
		Labels: map[string]string{consts.ReplicationOriginLabel: consumer, consts.ReplicatedLabel: "true", consts.RemoteClusterIDLabel: consumer}},
		Spec: authv1beta1.ResourceSliceSpec{ConsumerClusterID: &cid, ProviderClusterID: &pid, Class: "default",
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi"),
				corev1.ResourcePods: resource.MustParse("10")}}}
	nm := &offv1beta1.NamespaceMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "cl-provider",
		Labels: map[string]string{consts.ReplicationOriginLabel: consumer, consts.RemoteClusterIDLabel: consumer}},
		Spec: offv1beta1.NamespaceMapSpec{DesiredMapping: map[string]string{"app": remoteNS}}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS, Labels: map[string]string{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}}},
		tn, slice, nm,
	} {
		if err := prov.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	level := func(want string) func(context.Context) bool {
		return func(ctx context.Context) bool {
			ns := &corev1.Namespace{}
			return prov.Client.Get(ctx, client.ObjectKey{Name: remoteNS}, ns) == nil && ns.Labels[consts.PodSecurityEnforceLabel] == want &&
				ns.Labels[consts.PodSecurityEnforceVersionLabel] == "latest"
		}
	}
	testenv.Eventually(t, "the remote namespace at baseline", time.Minute, level("baseline"))

	asConsumer := prov.UserClient(t, consumer)
	attack := func(name string) *offv1beta1.ShadowPod {
		meta, spec := podsecuritytest.Pod()
		podsecuritytest.Attack(meta, spec)
		return &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNS, Name: name}, Spec: offv1beta1.ShadowPodSpec{Pod: *spec}}
	}
	var last error
	testenv.Eventually(t, "the consumer bound and the webhook in force", time.Minute, func(ctx context.Context) bool {
		last = asConsumer.Create(ctx, attack("attack"), client.DryRunAll)
		return last != nil && apierrors.IsInvalid(last)
	})
	last = asConsumer.Create(ctx, attack("attack"))
	for _, want := range append([]string{`Pod Security level "baseline"`, "pod_security"}, podsecuritytest.AttackWant...) {
		if last == nil || !strings.Contains(last.Error(), want) {
			t.Errorf("the attack: %v, want it refused saying %q", last, want)
		}
	}
	direct := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNS, Name: "direct"}, Spec: attack("direct").Spec.Pod}
	if err := prov.Client.Create(ctx, direct); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Errorf("a privileged pod created directly in the remote namespace: %v, want refused by the API server's Pod Security", err)
	}
	meta, spec := podsecuritytest.Pod()
	ok := &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNS, Name: "within-baseline", Annotations: meta.Annotations},
		Spec: offv1beta1.ShadowPodSpec{Pod: *spec}}
	if err := asConsumer.Create(ctx, ok); err != nil {
		t.Fatalf("a ShadowPod within baseline: %v", err)
	}
	runs := func(name string) {
		t.Helper()
		testenv.Eventually(t, "the pod of ShadowPod "+name+" Running", time.Minute, func(ctx context.Context) bool {
			pod := &corev1.Pod{}
			return prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNS, Name: name}, pod) == nil && pod.Status.Phase == corev1.PodRunning
		})
	}
	runs("within-baseline")
	if err := prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNS, Name: "attack"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the attack's pod: %v, want none", err)
	}

	// Privileged, granted to this consumer on purpose.
	annotate := func(value string) {
		t.Helper()
		patch := `{"metadata":{"annotations":{"` + consts.TenantPodSecurityAnnotation + `":` + value + `}}}`
		if err := prov.Client.Patch(ctx, tn, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	annotate(`"privileged"`)
	testenv.Eventually(t, "the remote namespace relabelled privileged", time.Minute, level("privileged"))
	testenv.Eventually(t, "the attack admitted", time.Minute, func(ctx context.Context) bool {
		last = asConsumer.Create(ctx, attack("attack"))
		return last == nil
	})
	runs("attack")
	annotate("null")
	testenv.Eventually(t, "the remote namespace back at baseline", time.Minute, level("baseline"))
	testenv.Eventually(t, "the attack refused again", time.Minute, func(ctx context.Context) bool {
		return apierrors.IsInvalid(asConsumer.Create(ctx, attack("attack-2"), client.DryRunAll))
	})

	// Privileged for every consumer: the provider's flag.
	stop()
	runProviderManager(t, prov, "--remote-namespace-pod-security=privileged")
	testenv.Eventually(t, "the remote namespace relabelled privileged by the flag", time.Minute, level("privileged"))
	testenv.Eventually(t, "the attack admitted with the flag", time.Minute, func(ctx context.Context) bool {
		last = asConsumer.Create(ctx, attack("attack-2"))
		return last == nil
	})
	runs("attack-2")
}
