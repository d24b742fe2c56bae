package peering_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/identities"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestProviderCordonSurvivesConsumer: the provider cordons the slice of a peering (as `liqoctl
// cordon resourceslice` does); the consumer, with its own identity on the provider, then tries
// everything it can do to its copy: lift the cordon or drop the provider's hold by an update,
// label the copy as the provider's own request, delete it, delete and create it again. None
// of it lifts the cordon: the copy stays (terminating, cordoned), the provider's grant webhook
// keeps refusing new ShadowPods of the slice's virtual node, naming the slice and the
// annotation, and the virtual node stays unschedulable. The provider's uncordon lets the held
// copy go, and the peering comes back schedulable. Cordoned again, Unpeer (what `terraform
// destroy` of liqo_peering runs: the consumer's slice deleted first) still removes everything.
func TestProviderCordonSurvivesConsumer(t *testing.T) {
	hook := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	a, b, st := peeredByManagers(t, testenv.ClusterOptions{ControllerManager: true},
		testenv.ClusterOptions{ControllerManager: true, Nodes: []testenv.NodeOptions{{Name: "b-node", CPU: "8", Memory: "16Gi"}}},
		"--webhook-url", "https://"+hook, "--webhook-bind-address", hook)
	begin := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	copyKey := client.ObjectKey{Namespace: st.ProviderTenantNamespace, Name: "cl-b"}
	remoteNS := offloadedNamespace(t, a.Client, b.Client, "work")
	consumer := consumerIdentity(t, a.Client, st.ConsumerTenantNamespace, b.Client)

	// liqoctl cordon resourceslice cl-b --remote-cluster-id cl-a, on the provider.
	annotateSlice(t, b.Client, copyKey, consts.CordonAnnotation, "true")
	s := &authv1beta1.ResourceSlice{}
	testenv.Eventually(t, "the provider's hold on its cordoned copy", 30*time.Second, func(ctx context.Context) bool {
		return b.Client.Get(ctx, copyKey, s) == nil && controllerutil.ContainsFinalizer(s, consts.ProviderCordonFinalizer)
	})
	unschedulable(t, a.Client, st.VirtualNode, "after the provider's cordon")

	// What the consumer can do to its copy with its own identity.
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("the consumer %s: %v, want it forbidden", what, err)
		}
	}
	forbidden("lifts the cordon", updateSlice(ctx, consumer, copyKey, func(s *authv1beta1.ResourceSlice) { delete(s.Annotations, consts.CordonAnnotation) }))
	forbidden("drops the provider's hold", updateSlice(ctx, consumer, copyKey, func(s *authv1beta1.ResourceSlice) { s.Finalizers = nil }))
	forbidden("labels its copy as the provider's own request", updateSlice(ctx, consumer, copyKey, func(s *authv1beta1.ResourceSlice) {
		s.Labels[consts.ReplicationLabel] = "true"
	}))
	if err := consumer.Delete(ctx, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: copyKey.Namespace, Name: copyKey.Name}}); err != nil {
		t.Fatalf("the consumer deletes its copy: %v", err)
	}
	recreated := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: copyKey.Namespace, Name: copyKey.Name,
		Labels: map[string]string{consts.ReplicatedLabel: "true", consts.RemoteClusterIDLabel: "cl-a"}},
		Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: ptr.To(corev1beta1.ClusterID("cl-b")), ConsumerClusterID: ptr.To(corev1beta1.ClusterID("cl-a")),
			Resources: resources("2", "4Gi", "20")}}
	if err := consumer.Create(ctx, recreated); !apierrors.IsAlreadyExists(err) {
		t.Errorf("the consumer creates its copy again: %v, want AlreadyExists (the deleted copy is held)", err)
	}
	// A while later: the copy is still there, cordoned; the node unschedulable; new ShadowPods refused.
	time.Sleep(3 * time.Second)
	if err := b.Client.Get(ctx, copyKey, s); err != nil || s.DeletionTimestamp == nil || !consts.CordonSet(s.Annotations, consts.CordonAnnotation) {
		t.Errorf("the copy after the consumer's delete: %v, deleted at %v, annotations %v; want it held, cordoned", err, s.DeletionTimestamp, s.Annotations)
	}
	unschedulable(t, a.Client, st.VirtualNode, "after the consumer deleted the copy")
	refusal := shadowPodRefusal(t, consumer, remoteNS, st.VirtualNode)
	for _, part := range []string{"ResourceSlice " + copyKey.String(), consts.CordonAnnotation, "liqoctl uncordon resourceslice cl-b --remote-cluster-id cl-a"} {
		if !strings.Contains(refusal, part) {
			t.Errorf("the ShadowPod's refusal does not say %q: %s", part, refusal)
		}
	}
	expectHeldEvent(t, b.Client, copyKey)

	// liqoctl uncordon resourceslice: the held copy goes, replication makes a new one, and the
	// virtual node takes pods again.
	annotateSlice(t, b.Client, copyKey, consts.CordonAnnotation, "")
	testenv.Eventually(t, "the virtual node schedulable after the uncordon", time.Minute, func(ctx context.Context) bool {
		n := &corev1.Node{}
		return a.Client.Get(ctx, client.ObjectKey{Name: st.VirtualNode}, n) == nil && !n.Spec.Unschedulable && nodeReady(n)
	})
	testenv.Eventually(t, "a new copy, not held", time.Minute, func(ctx context.Context) bool {
		return b.Client.Get(ctx, copyKey, s) == nil && s.DeletionTimestamp == nil && !controllerutil.ContainsFinalizer(s, consts.ProviderCordonFinalizer)
	})

	// Cordoned again, the peering is removed as terraform destroy removes it.
	annotateSlice(t, b.Client, copyKey, consts.CordonAnnotation, "true")
	testenv.Eventually(t, "the provider's hold again", 30*time.Second, func(ctx context.Context) bool {
		return b.Client.Get(ctx, copyKey, s) == nil && controllerutil.ContainsFinalizer(s, consts.ProviderCordonFinalizer)
	})
	// Unpeer gets a budget of its own: on a loaded 2-core CI machine the steps above used up the
	// test's four minutes once (CI, stop 39), and Unpeer then failed on the test's deadline, not its own.
	unpeerCtx, cancelUnpeer := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancelUnpeer()
	t.Logf("the steps before Unpeer took %s", time.Since(begin).Round(time.Millisecond))
	start := time.Now()
	if err := peering.Unpeer(unpeerCtx, a, b, peering.Options{}); err != nil {
		t.Fatalf("Unpeer of a cordoned peering: %v", err)
	}
	t.Logf("a cordoned peering unpeered in %s", time.Since(start).Round(time.Millisecond))
	for _, c := range []peering.Cluster{a, b} {
		testenv.Eventually(t, "nothing left on "+c.Name, 30*time.Second, func(context.Context) bool { return len(liqoObjects(t, c.Client)) == 0 })
	}
}

// peeredByManagers starts clusters cl-a (consumer) and cl-b (provider) as their options say
// (their names set here), each with the real controller manager (the provider's with
// providerArgs too), peers them with Peer asking for 2 CPUs, 4Gi and 20 pods, and returns both
// and the peering's state. Clusters of their own, not the shared pair: their callers want a
// scheduler, other nodes or other provider flags, and leave pods and offloaded namespaces.
func peeredByManagers(t *testing.T, consumer, provider testenv.ClusterOptions, providerArgs ...string) (a, b peering.Cluster, st *peering.State) {
	t.Helper()
	consumer.Name, provider.Name = "cl-a", "cl-b"
	env := testenv.New(t, consumer, provider)
	startManager(t, env.Cluster("cl-a"), "--pod-cidr", "10.110.0.0/16")
	startManager(t, env.Cluster("cl-b"), append([]string{"--pod-cidr", "10.120.0.0/16"}, providerArgs...)...)
	a, b = peering.Cluster{Name: "a", Client: env.Cluster("cl-a").Client}, peering.Cluster{Name: "b", Client: env.Cluster("cl-b").Client}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	st, err := peering.Peer(ctx, a, b, peering.Options{Resources: resources("2", "4Gi", "20")})
	if err != nil {
		t.Fatal(err)
	}
	return a, b, st
}

// annotateSlice sets (or, with "", removes) an annotation of a slice as its cluster's admin.
func annotateSlice(t *testing.T, c client.Client, key client.ObjectKey, k, v string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return updateSlice(t.Context(), c, key, func(s *authv1beta1.ResourceSlice) {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			if v == "" {
				delete(s.Annotations, k)
			} else {
				s.Annotations[k] = v
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// updateSlice reads a slice, changes it and writes it back.
func updateSlice(ctx context.Context, c client.Client, key client.ObjectKey, mutate func(*authv1beta1.ResourceSlice)) error {
	s := &authv1beta1.ResourceSlice{}
	if err := c.Get(ctx, key, s); err != nil {
		return err
	}
	mutate(s)
	return c.Update(ctx, s)
}

// unschedulable checks that the virtual node is unschedulable and stays so for a second.
func unschedulable(t *testing.T, c client.Client, name, when string) {
	t.Helper()
	testenv.Eventually(t, "virtual node "+name+" unschedulable "+when, 30*time.Second, func(ctx context.Context) bool {
		n := &corev1.Node{}
		return c.Get(ctx, client.ObjectKey{Name: name}, n) == nil && n.Spec.Unschedulable
	})
	for range 10 {
		n := &corev1.Node{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, n); err != nil || !n.Spec.Unschedulable {
			t.Errorf("virtual node %s %s: %v, unschedulable %v; want it unschedulable", name, when, err, n.Spec.Unschedulable)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// offloadedNamespace offloads namespace name of the consumer (same name on the provider) and
// returns its remote namespace once the provider made it.
func offloadedNamespace(t *testing.T, consumer, provider client.Client, name string) string {
	t.Helper()
	ctx := t.Context()
	if err := consumer.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	if err := consumer.Create(ctx, &offv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "offloading"},
		Spec: offv1beta1.NamespaceOffloadingSpec{NamespaceMappingStrategy: offv1beta1.EnforceSameNameMappingStrategyType,
			PodOffloadingStrategy: offv1beta1.RemotePodOffloadingStrategyType}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the offloaded namespace "+name+" on the provider", time.Minute, func(ctx context.Context) bool {
		return provider.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{}) == nil
	})
	return name
}

// consumerIdentity is a client of the provider authenticated as the consumer, with the
// control-plane identity the consumer holds in its tenant namespace.
func consumerIdentity(t *testing.T, consumer client.Client, tenantNS string, provider client.Client) client.Client {
	t.Helper()
	name, err := identities.ControlPlaneSecret(t.Context(), consumer, tenantNS, "cl-b")
	if err != nil || name == "" {
		t.Fatalf("the consumer's identity Secret: %q, %v", name, err)
	}
	secret := &corev1.Secret{}
	if err := consumer.Get(t.Context(), client.ObjectKey{Namespace: tenantNS, Name: name}, secret); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[consts.KubeconfigSecretKey])
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: provider.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// shadowPodRefusal creates, as the consumer, a ShadowPod of the virtual node in the remote
// namespace (what the virtual kubelet does for a pod bound there) and returns the denial.
func shadowPodRefusal(t *testing.T, consumer client.Client, namespace, node string) string {
	t.Helper()
	sp := &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "new-pod",
		Labels: map[string]string{consts.OriginNodeLabel: node}},
		Spec: offv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}}
	err := consumer.Create(t.Context(), sp)
	if err == nil {
		t.Fatalf("the provider admitted a new ShadowPod of the cordoned slice's node %s", node)
	}
	if !strings.Contains(err.Error(), "is cordoned") {
		t.Fatalf("the new ShadowPod of node %s: %v, want a cordon refusal", node, err)
	}
	return err.Error()
}

// expectHeldEvent waits for the Event saying why a deleted copy stays.
func expectHeldEvent(t *testing.T, c client.Client, key client.ObjectKey) {
	t.Helper()
	testenv.Eventually(t, "the CordonHeld Event of "+key.String(), 30*time.Second, func(ctx context.Context) bool {
		list := &eventsv1.EventList{}
		if err := c.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Regarding.Name == key.Name && e.Reason == "CordonHeld" && strings.Contains(e.Note, "stays, cordoned") {
				return true
			}
		}
		return false
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
