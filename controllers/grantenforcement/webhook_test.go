package grantenforcement_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/grantenforcement"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// startGrantWebhook runs a manager serving the grant webhook (with the Pod Security policy
// pol), registered with cl's API server, until the test ends, and returns the webhook's handler.
func startGrantWebhook(tb testing.TB, cl *testenv.Cluster, pol podsecurity.Policy) *grantenforcement.Handler {
	tb.Helper()
	ws := testenv.LocalWebhookServer(tb, cl)
	var h *grantenforcement.Handler
	testenv.StartManager(tb, cl, func(mgr ctrl.Manager) error {
		h = &grantenforcement.Handler{Client: mgr.GetClient(), Decoder: admission.NewDecoder(mgr.GetScheme()), PodSecurity: pol}
		ws.Register(grantenforcement.Path, h)
		for _, wh := range grantenforcement.Webhooks() {
			ws.AddValidating(grantenforcement.Configuration, grantenforcement.Path, wh)
		}
		return mgr.Add(ws)
	})
	return h
}

// provider is a provider cluster with the grant webhook registered.
type provider struct {
	t       *testing.T
	cl      *testenv.Cluster
	handler *grantenforcement.Handler
}

func startProvider(t *testing.T) *provider {
	t.Helper()
	return startProviderWith(t, podsecurity.Policy{})
}

// startProviderWith is startProvider with the Pod Security policy pol.
func startProviderWith(t *testing.T, pol podsecurity.Policy) *provider {
	t.Helper()
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider"})
	cl := env.Cluster("provider")
	if _, err := clusteridentity.Ensure(t.Context(), cl.Client, clusteridentity.Config{ClusterID: "cl-provider"}); err != nil {
		t.Fatal(err) // the liqo namespace and the peer ClusterRoles
	}
	h := startGrantWebhook(t, cl, pol)
	return &provider{t: t, cl: cl, handler: h}
}

func (p *provider) create(objs ...client.Object) {
	p.t.Helper()
	for _, o := range objs {
		if err := p.cl.Client.Create(p.t.Context(), o); err != nil {
			p.t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// peer sets up a consumer: its tenant namespace with an accepted slice granting grant, and
// remote namespaces where its user is bound to liqo-remote-workload.
func (p *provider) peer(consumer string, grant corev1.ResourceList, remoteNamespaces ...string) {
	p.t.Helper()
	tenantNS := "liqo-tenant-" + consumer
	p.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS,
		Labels: map[string]string{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}}})
	if grant != nil {
		p.slice(tenantNS, "granted", consumer, grant, authv1beta1.ResourceSliceConditionAccepted, nil)
	}
	for _, ns := range remoteNamespaces {
		p.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{consts.RemoteNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}}})
		p.bind(ns, consumer)
	}
}

func (p *provider) bind(ns, user string) {
	p.t.Helper()
	p.create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "liqo-remote-workload-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.RemoteWorkloadClusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}})
}

// slice creates a slice with the given decision (status written as the negotiation
// controller would).
func (p *provider) slice(ns, name, consumer string, resources corev1.ResourceList, decision authv1beta1.ResourceSliceConditionStatus, labels map[string]string) *authv1beta1.ResourceSlice {
	p.t.Helper()
	id := corev1beta1.ClusterID(consumer)
	s := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: authv1beta1.ResourceSliceSpec{ConsumerClusterID: &id, Resources: resources}}
	p.create(s)
	s.Status.Resources = resources.DeepCopy()
	s.Status.Conditions = []authv1beta1.ResourceSliceCondition{{Type: authv1beta1.ResourceSliceConditionTypeResources, Status: decision, LastTransitionTime: metav1.Now()}}
	if err := p.cl.Client.Status().Update(p.t.Context(), s); err != nil {
		p.t.Fatal(err)
	}
	return s
}

// as returns a client authenticating as user (a client certificate, as a peer's identity).
func (p *provider) as(user string) client.Client {
	p.t.Helper()
	kc, err := p.cl.UserKubeconfig(user)
	if err != nil {
		p.t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		p.t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: p.cl.Client.Scheme()})
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

func shadowPod(ns, name, cpu, memory string) *offv1beta1.ShadowPod {
	res := corev1.ResourceList{}
	if cpu != "" {
		res[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		res[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: offv1beta1.ShadowPodSpec{Pod: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: res}}}}}}
}

func rlist(pairs ...string) corev1.ResourceList { return rl(pairs...) }

func wantDenied(t *testing.T, err error, what string, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: admitted, want denied", what)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: message %q does not say %q", what, err.Error(), p)
		}
	}
}

// waitForWebhook waits until the API server consults the webhook (a ShadowPod far beyond any
// grant, dry run, is refused).
func (p *provider) waitForWebhook(ns string) {
	p.t.Helper()
	testenv.Eventually(p.t, "the grant webhook", 30*time.Second, func(ctx context.Context) bool {
		err := p.cl.Client.Create(ctx, shadowPod(ns, "probe", "1000", ""), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "granted")
	})
}

// TestGrantEnforced: as the consumer's own user, ShadowPods within the grant (cpu, memory and
// pods, summed over its remote namespaces) are admitted and one beyond it is denied with the
// consumer, the resource, requested vs granted and the fix; slices that are denied or that
// are this cluster's own requests do not count; an update asking for more is checked, one
// that does not is admitted even beyond a grant that shrank or vanished; a consumer is refused ShadowPods
// outside its remote namespaces; a consumer with no accepted slice gets nothing.
func TestGrantEnforced(t *testing.T) {
	p := startProvider(t)
	ctx := t.Context()
	const consumer = "cl-consumer"
	p.peer(consumer, rlist("cpu", "2", "memory", "4Gi", "pods", "4"), "app-cl-consumer", "db-cl-consumer")
	tenantNS := "liqo-tenant-" + consumer
	p.slice(tenantNS, "denied", consumer, rlist("cpu", "100", "pods", "100"), authv1beta1.ResourceSliceConditionDenied, nil)
	p.slice(tenantNS, "own-request", consumer, rlist("cpu", "100", "pods", "100"), authv1beta1.ResourceSliceConditionAccepted,
		map[string]string{consts.ReplicationLabel: "true"})
	p.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-remote"}})
	p.bind("not-remote", consumer) // RBAC would allow it: the webhook must refuse
	p.waitForWebhook("app-cl-consumer")
	c := p.as(consumer)

	for _, sp := range []*offv1beta1.ShadowPod{
		shadowPod("app-cl-consumer", "a", "1", "1Gi"),
		shadowPod("db-cl-consumer", "b", "800m", "1Gi"),
	} {
		if err := c.Create(ctx, sp); err != nil {
			t.Fatalf("ShadowPod %s within the grant: %v", sp.Name, err)
		}
	}
	err := c.Create(ctx, shadowPod("app-cl-consumer", "c", "300m", "100Mi"))
	wantDenied(t, err, "a third ShadowPod beyond the cpu grant", consumer, "cpu: 2100m requested in all (1800m by its other ShadowPods + 300m by this one), 2 granted",
		"bigger (or a further) ResourceSlice")
	if err := c.Create(ctx, shadowPod("app-cl-consumer", "d", "200m", "1Gi")); err != nil {
		t.Fatalf("a ShadowPod filling the cpu grant exactly: %v", err)
	}
	if err := c.Create(ctx, shadowPod("db-cl-consumer", "e", "", "")); err != nil {
		t.Fatalf("the fourth ShadowPod (pods grant 4): %v", err)
	}
	wantDenied(t, c.Create(ctx, shadowPod("db-cl-consumer", "f", "", "")), "a fifth ShadowPod", consumer, "pods: 5 requested in all", "4 granted")
	// The admin is held to the namespace owner's grant too.
	wantDenied(t, p.cl.Client.Create(ctx, shadowPod("app-cl-consumer", "g", "", "1Gi")), "the admin's ShadowPod beyond the grant", consumer, "pods")

	// Updates: asking for more is checked; not asking for more is always admitted.
	b := &offv1beta1.ShadowPod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "db-cl-consumer", Name: "b"}, b); err != nil {
		t.Fatal(err)
	}
	b.Spec.Pod.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("900m")
	wantDenied(t, c.Update(ctx, b), "growing b beyond the grant", "cpu: 2100m requested in all (1200m by its other ShadowPods + 900m by this one), 2 granted")
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	b.Spec.Pod.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("3Gi") // 1+3+1 = 5Gi > 4Gi
	wantDenied(t, c.Update(ctx, b), "growing b's memory beyond the grant", "memory", "4Gi granted")

	// The grant shrinks (the slice's status says 1 cpu now): nothing new fits, but updates that
	// do not ask for more (labels, finalizers on the way out) and deletions go through.
	granted := &authv1beta1.ResourceSlice{}
	if err := p.cl.Client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "granted"}, granted); err != nil {
		t.Fatal(err)
	}
	granted.Status.Resources[corev1.ResourceCPU] = resource.MustParse("1")
	if err := p.cl.Client.Status().Update(ctx, granted); err != nil {
		t.Fatal(err)
	}
	var last error
	testenv.Eventually(t, "the smaller grant in force", 30*time.Second, func(ctx context.Context) bool {
		last = p.cl.Client.Create(ctx, shadowPod("app-cl-consumer", "probe", "", ""), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "1 granted")
	})
	wantDenied(t, last, "a BestEffort ShadowPod over a shrunk grant", "cpu: 2 requested in all (2 by its other ShadowPods + 0 by this one), 1 granted")
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	b.Labels = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, b); err != nil {
		t.Errorf("a label update of a ShadowPod over a shrunk grant: %v", err)
	}
	if err := c.Delete(ctx, b); err != nil {
		t.Errorf("deleting a ShadowPod: %v", err)
	}
	// The grant vanishes (slice deleted): metadata updates still go through, growth does not.
	if err := p.cl.Client.Delete(ctx, granted); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "no grant in force", 30*time.Second, func(ctx context.Context) bool {
		err := p.cl.Client.Create(ctx, shadowPod("app-cl-consumer", "probe", "", ""), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "no accepted ResourceSlice")
	})
	a := &offv1beta1.ShadowPod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "app-cl-consumer", Name: "a"}, a); err != nil {
		t.Fatal(err)
	}
	a.Finalizers = []string{"example.com/cleanup"}
	if err := c.Update(ctx, a); err != nil {
		t.Errorf("a finalizer update with no grant left: %v", err)
	}
	a.Spec.Pod.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	wantDenied(t, c.Update(ctx, a), "growing a ShadowPod with no grant left", "no accepted ResourceSlice")
	if err := c.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
		t.Fatal(err)
	}
	a.Finalizers = nil
	if err := c.Update(ctx, a); err != nil {
		t.Errorf("removing the finalizer: %v", err)
	}

	// Outside its remote namespaces.
	wantDenied(t, c.Create(ctx, shadowPod("not-remote", "x", "", "")), "a ShadowPod of the consumer outside its remote namespaces",
		"cluster cl-consumer may create ShadowPods only in its own remote namespaces", "not-remote")
	if err := p.cl.Client.Create(ctx, shadowPod("not-remote", "admin", "", "")); err != nil {
		t.Errorf("the admin's ShadowPod in a namespace that is no consumer's: %v", err)
	}

	// A consumer with a tenant namespace but no accepted slice.
	p.peer("cl-nothing", nil, "app-cl-nothing")
	wantDenied(t, p.as("cl-nothing").Create(ctx, shadowPod("app-cl-nothing", "a", "", "")), "a ShadowPod with no grant",
		"cluster cl-nothing has no accepted ResourceSlice")
	// A consumer is not let into another consumer's remote namespace by the webhook either.
	p.bind("app-cl-nothing", consumer)
	wantDenied(t, c.Create(ctx, shadowPod("app-cl-nothing", "intruder", "", "")), "a ShadowPod in another consumer's remote namespace",
		"only in its own remote namespaces")
}

// TestConcurrentAdmissions: ShadowPods created all at once, each within the grant, are
// admitted only as far as the grant goes, although the cache shows none of them while they
// are admitted.
func TestConcurrentAdmissions(t *testing.T) {
	p := startProvider(t)
	const consumer, ns = "cl-racer", "app-cl-racer"
	p.peer(consumer, rlist("cpu", "2", "pods", "100"), ns)
	p.waitForWebhook(ns)
	c := p.as(consumer)

	const n = 12 // 300m each: 6 fit in 2 CPUs
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Create(context.Background(), shadowPod(ns, fmt.Sprintf("sp-%d", i), "300m", ""))
		}()
	}
	wg.Wait()
	admitted := 0
	for _, err := range errs {
		switch {
		case err == nil:
			admitted++
		case !strings.Contains(err.Error(), "granted"):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if admitted != 6 {
		t.Errorf("%d of %d concurrent 300m ShadowPods admitted under a 2-CPU grant, want exactly 6", admitted, n)
	}
	list := &offv1beta1.ShadowPodList{}
	if err := p.cl.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	total := resource.Quantity{}
	for _, sp := range list.Items {
		total.Add(sp.Spec.Pod.Containers[0].Resources.Requests[corev1.ResourceCPU])
	}
	if total.Cmp(resource.MustParse("2")) > 0 {
		t.Errorf("stored ShadowPods ask for %s CPU, over the 2 granted", total.String())
	}
	// Once the cache has caught up, the reservations are released on the next admission.
	testenv.Eventually(t, "the reservations released", 30*time.Second, func(ctx context.Context) bool {
		_ = c.Create(ctx, shadowPod(ns, "probe", "300m", ""), client.DryRunAll)
		return p.handler.Reserved(consumer) == 0
	})
}

// BenchmarkAdmission: one ShadowPod creation (dry run) through the API server and the grant
// webhook over HTTPS, with 200 ShadowPods of the consumer already in its two remote
// namespaces; compare with BenchmarkAdmission/no-webhook, the same request in a namespace the
// webhook does not check.
func BenchmarkAdmission(b *testing.B) {
	env := testenv.New(b, testenv.ClusterOptions{Name: "provider"})
	cl := env.Cluster("provider")
	ctx := b.Context()
	if err := cl.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}); err != nil {
		b.Fatal(err)
	}
	startGrantWebhook(b, cl, podsecurity.Policy{})

	const consumer = "cl-bench"
	create := func(o client.Object) {
		if err := cl.Client.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-" + consumer,
		Labels: map[string]string{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}}})
	id := corev1beta1.ClusterID(consumer)
	s := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-" + consumer, Name: "s"},
		Spec: authv1beta1.ResourceSliceSpec{ConsumerClusterID: &id}}
	create(s)
	s.Status.Resources = rl("cpu", "1000", "memory", "1000Gi", "pods", "1000")
	s.Status.Conditions = []authv1beta1.ResourceSliceCondition{{Type: authv1beta1.ResourceSliceConditionTypeResources, Status: authv1beta1.ResourceSliceConditionAccepted, LastTransitionTime: metav1.Now()}}
	if err := cl.Client.Status().Update(ctx, s); err != nil {
		b.Fatal(err)
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}})
	for _, ns := range []string{"one-" + consumer, "two-" + consumer} {
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{consts.RemoteNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}}})
		for i := range 100 {
			create(shadowPod(ns, fmt.Sprintf("sp-%d", i), "100m", "128Mi"))
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := cl.Client.Create(ctx, shadowPod("one-"+consumer, "probe", "2000", ""), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "granted"), nil
	}); err != nil {
		b.Fatalf("webhook not in force: %v", err)
	}
	fast := rest.CopyConfig(cl.Config)
	fast.QPS, fast.Burst = 10000, 10000 // the client's rate limit would be all the benchmark measures
	c, err := client.New(fast, client.Options{Scheme: cl.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, ns string }{{"webhook", "one-" + consumer}, {"no-webhook", "plain"}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if err := c.Create(ctx, shadowPod(tc.ns, "bench", "100m", "128Mi"), client.DryRunAll); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
