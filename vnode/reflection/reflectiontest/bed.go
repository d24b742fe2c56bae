// Package reflectiontest sets up what the tests of a virtual node's reflectors need: a consumer
// and a provider cluster, remote namespaces where the consumer's user holds the
// liqo-remote-workload ClusterRole (and nothing else), and a reflector running for a virtual
// node whose Env reaches the provider as that user.
package reflectiontest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
)

// Cluster IDs of the bed.
const (
	ConsumerID corev1beta1.ClusterID = "cl-consumer"
	ProviderID corev1beta1.ClusterID = "cl-provider"
	// NodeName is the virtual node's name.
	NodeName = "liqo-cl-provider"
)

// Bed is a consumer and a provider cluster.
type Bed struct {
	Consumer, Provider *testenv.Cluster
	// Local is an admin client of the consumer; Admin one of the provider.
	Local, Admin kubernetes.Interface
	// Remote reaches the provider as the consumer's user; RemoteConfig is its configuration.
	Remote       kubernetes.Interface
	RemoteConfig *rest.Config
}

// New starts the two clusters (stopped when t ends) and the provider's ClusterRoles.
func New(t testing.TB, consumer, provider testenv.ClusterOptions) *Bed {
	t.Helper()
	consumer.Name, provider.Name = "consumer", "provider"
	env := testenv.New(t, consumer, provider)
	if err := ensureProvider(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	return bedOf(t, env)
}

// Shared describes the two clusters, with the provider's ClusterRoles, for several tests of a
// package to share (testenv.Shared; the package's TestMain stops them); each test takes them
// with FromShared and uses namespaces of its own.
func Shared(consumer, provider testenv.ClusterOptions) *testenv.Shared {
	consumer.Name, provider.Name = "consumer", "provider"
	return testenv.NewShared(ensureProvider, consumer, provider)
}

// FromShared is the Bed of shared clusters, started on the first call.
func FromShared(t testing.TB, s *testenv.Shared) *Bed {
	t.Helper()
	return bedOf(t, s.Env(t))
}

// ensureProvider records the provider's identity, which writes its ClusterRoles.
func ensureProvider(ctx context.Context, env *testenv.Env) error {
	_, err := clusteridentity.Ensure(ctx, env.Cluster("provider").Client, clusteridentity.Config{ClusterID: ProviderID})
	return err
}

// bedOf is the Bed of env's clusters.
func bedOf(t testing.TB, env *testenv.Env) *Bed {
	t.Helper()
	b := &Bed{Consumer: env.Cluster("consumer"), Provider: env.Cluster("provider")}
	kc, err := b.Provider.UserKubeconfig(string(ConsumerID))
	if err != nil {
		t.Fatal(err)
	}
	if b.RemoteConfig, err = clientcmd.RESTConfigFromKubeConfig(kc); err != nil {
		t.Fatal(err)
	}
	b.Remote = kubernetes.NewForConfigOrDie(b.RemoteConfig)
	fast := func(c *rest.Config) *rest.Config {
		c = rest.CopyConfig(c)
		c.QPS, c.Burst = 500, 1000
		return c
	}
	b.Local = kubernetes.NewForConfigOrDie(fast(b.Consumer.Config))
	b.Admin = kubernetes.NewForConfigOrDie(fast(b.Provider.Config))
	return b
}

// Namespaces creates local on the consumer and remote on the provider, as the provider's
// namespace-offloading controller would: labelled as a remote namespace of the consumer and
// with liqo-remote-workload bound to the consumer's user.
func (b *Bed) Namespaces(t testing.TB, local, remote string) {
	t.Helper()
	ctx := t.Context()
	if _, err := b.Local.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: local}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: remote,
		Labels:      map[string]string{consts.RemoteNamespaceLabel: "true", consts.RemoteClusterIDLabel: string(ConsumerID)},
		Annotations: map[string]string{consts.OriginNamespaceAnnotation: local}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Admin.RbacV1().RoleBindings(remote).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: clusteridentity.RemoteWorkloadClusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.RemoteWorkloadClusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: string(ConsumerID)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Env is the virtual node's Env with the given namespace mappings.
func (b *Bed) Env(t testing.TB, mapper *namespaces.Mapper) *vnode.Env {
	return &vnode.Env{NodeName: NodeName, ConsumerID: ConsumerID, ProviderID: ProviderID,
		TenantNamespace: "liqo-tenant-cl-provider", Local: b.Local, LocalConfig: rest.CopyConfig(b.Consumer.Config),
		Remote: b.Remote, RemoteConfig: rest.CopyConfig(b.RemoteConfig), Namespaces: mapper, Log: testr.NewWithInterface(t, testr.Options{Verbosity: 1})} // V(1): what was reflected
}

// Start runs r with env until the returned stop is called (or t ends); stop waits for Run to
// return and fails t if it returned an error.
func Start(t testing.TB, r vnode.Reflector, env *vnode.Env) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, env) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("reflector %s: %v", r.Name(), err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// Eventually waits up to timeout for cond, failing t with what it waited for.
func Eventually(t *testing.T, what string, timeout time.Duration, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last error: %v)", what, err, last)
	}
}

// Never checks, for the given time, that cond stays false; it fails t otherwise. Use it after
// something positive proved that the reflector handled what came before.
func Never(t *testing.T, what string, d time.Duration, cond func(ctx context.Context) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond(t.Context()) {
			t.Fatalf("%s happened", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
