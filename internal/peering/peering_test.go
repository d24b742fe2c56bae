package peering_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

func TestMain(m *testing.M) {
	code := testenv.RunShared(m, clusterPair, peering.OneCluster)
	if err := testenv.RemoveBuilds(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// startManager runs the real controller manager binary for a cluster until the test ends.
func startManager(t *testing.T, cl *testenv.Cluster, args ...string) {
	t.Helper()
	probe := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logf, err := os.Create(filepath.Join(t.TempDir(), cl.Name+"-manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	managerBin := filepath.Join(testenv.BuildOnce(t, "./cmd/liqo-controller-manager"), "liqo-controller-manager")
	cmd := exec.Command(managerBin, append([]string{"--kubeconfig", cl.KubeconfigPath, "--cluster-id", cl.Name,
		"--health-probe-bind-address", probe, "--metrics-bind-address", "0"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = logf.Close()
		if t.Failed() {
			log, _ := os.ReadFile(logf.Name())
			t.Logf("controller manager of %s, its errors and its last lines before the shutdown:\n%s", cl.Name, testenv.ManagerLogBeforeShutdown(string(log), 60))
		}
	})
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return testenv.ProbeOK(ctx, probe, "/readyz"), nil
	})
	if err != nil {
		t.Fatalf("controller manager of %s not ready: %v", cl.Name, err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func resources(cpu, memory, pods string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods: resource.MustParse(pods)}
}

// clusterPair is cl-a and cl-b, each with a KWOK node to share, shared by the tests that take
// them through twoClusters: each test runs its own controller managers and leaves no peering.
var clusterPair = testenv.NewShared(nil,
	testenv.ClusterOptions{Name: "cl-a", ControllerManager: true, Nodes: []testenv.NodeOptions{{Name: "a-node", CPU: "8", Memory: "16Gi"}}},
	testenv.ClusterOptions{Name: "cl-b", ControllerManager: true, Nodes: []testenv.NodeOptions{{Name: "b-node", CPU: "8", Memory: "16Gi"}}},
)

// twoClusters returns the shared a and b with our controller manager running on each for the
// test. When the test ends, any peering between them is removed (while the managers still run)
// and nothing of ours may be left, so that the next test starts from clean clusters.
func twoClusters(t *testing.T) (peering.Cluster, peering.Cluster, *testenv.Env) {
	t.Helper()
	env := clusterPair.Env(t)
	startManager(t, env.Cluster("cl-a"), "--pod-cidr", "10.110.0.0/16")
	startManager(t, env.Cluster("cl-b"), "--pod-cidr", "10.120.0.0/16")
	a, b := peering.Cluster{Name: "a", Client: env.Cluster("cl-a").Client}, peering.Cluster{Name: "b", Client: env.Cluster("cl-b").Client}
	t.Cleanup(func() { unpeerAll(t, a, b) })
	return a, b, env
}

// unpeerAll removes the peerings between a and b in both directions and waits until nothing
// of ours is left on either; it fails t when something stays.
func unpeerAll(t *testing.T, a, b peering.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // t's context has ended
	defer cancel()
	for _, p := range [][2]peering.Cluster{{a, b}, {b, a}} {
		if err := peering.Unpeer(ctx, p[0], p[1], peering.Options{}); err != nil {
			t.Errorf("cleaning up: Unpeer %s→%s: %v", p[0].Name, p[1].Name, err)
		}
	}
	for _, c := range []peering.Cluster{a, b} {
		var left []string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var err error
			left, err = liqoObjectsIn(ctx, c.Client)
			offloadings := &offv1beta1.NamespaceOffloadingList{} // a namespace offloaded by a test
			if err == nil {
				err = c.Client.List(ctx, offloadings)
			}
			for _, o := range offloadings.Items {
				left = append(left, "NamespaceOffloading "+o.Namespace+"/"+o.Name)
			}
			return err == nil && len(left) == 0, nil
		})
		if err != nil {
			t.Errorf("cleaning up: left on %s for the next test: %v", c.Name, left)
		}
	}
}

// liqoObjects counts what a peering leaves in a cluster: tenant namespaces and our objects.
func liqoObjects(t *testing.T, c client.Client) []string {
	t.Helper()
	left, err := liqoObjectsIn(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// liqoObjectsIn is liqoObjects with a context of its own.
func liqoObjectsIn(ctx context.Context, c client.Client) ([]string, error) {
	var left []string
	nss := &corev1.NamespaceList{}
	if err := c.List(ctx, nss); err != nil {
		return nil, err
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "liqo-tenant-") {
			left = append(left, "namespace/"+ns.Name+" ("+string(ns.Status.Phase)+")")
		}
	}
	for _, l := range []client.ObjectList{&authv1beta1.TenantList{}, &authv1beta1.IdentityList{}, &authv1beta1.ResourceSliceList{},
		&corev1beta1.ForeignClusterList{}} {
		if err := c.List(ctx, l); err != nil {
			return nil, err
		}
		if n := len(mustItems(l)); n > 0 {
			left = append(left, fmt.Sprintf("%T: %d", l, n))
		}
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.MatchingLabels{"liqo.io/type": "virtual-node"}); err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		left = append(left, "node/"+n.Name)
	}
	return left, nil
}

func mustItems(l client.ObjectList) []any {
	switch v := l.(type) {
	case *authv1beta1.TenantList:
		return anySlice(v.Items)
	case *authv1beta1.IdentityList:
		return anySlice(v.Items)
	case *authv1beta1.ResourceSliceList:
		return anySlice(v.Items)
	case *corev1beta1.ForeignClusterList:
		return anySlice(v.Items)
	}
	return nil
}

func anySlice[T any](in []T) []any {
	out := make([]any, len(in))
	for i := range in {
		out[i] = in[i]
	}
	return out
}

// TestPeerUpdateUnpeer: Peer from nothing to a Ready virtual node with the asked resources;
// Peer again changes nothing; other resources are re-negotiated in place; an ask above what
// the provider shares fails with the provider's reason; Unpeer leaves no tenant namespace, no
// Liqo object and no virtual node on either cluster.
func TestPeerUpdateUnpeer(t *testing.T) {
	a, b, _ := twoClusters(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	start := time.Now()
	st, err := peering.Peer(ctx, a, b, peering.Options{Resources: resources("2", "4Gi", "20")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peered in %s", time.Since(start).Round(time.Millisecond))
	if st.VirtualNode != "cl-b" || st.Authentication != peering.StatusEstablished || st.Offloading != peering.StatusReady ||
		st.Networking != peering.StatusDisabled || st.ConsumerID != "cl-a" || st.ProviderID != "cl-b" {
		t.Errorf("state after Peer: %+v", st)
	}
	if st.Granted.Cpu().String() != "2" || st.Granted.Memory().String() != "4Gi" {
		t.Errorf("granted %v, want the asked resources", st.Granted)
	}

	start = time.Now()
	if _, err := peering.Peer(ctx, a, b, peering.Options{Resources: resources("2", "4Gi", "20")}); err != nil {
		t.Fatal(err)
	}
	t.Logf("second Peer (no change) in %s", time.Since(start).Round(time.Millisecond))

	st, err = peering.Peer(ctx, a, b, peering.Options{Resources: resources("3", "4Gi", "20")})
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	if err := a.Client.Get(ctx, client.ObjectKey{Name: st.VirtualNode}, node); err != nil || node.Status.Capacity.Cpu().String() != "3" {
		t.Errorf("virtual node after asking for 3 CPUs: capacity %v, %v", node.Status.Capacity, err)
	}

	// The provider shares half of its node's 8 CPUs by default.
	_, err = peering.Peer(ctx, a, b, peering.Options{Resources: resources("64", "4Gi", "20")})
	if err == nil || !strings.Contains(err.Error(), "denied") || !strings.Contains(err.Error(), "put back") {
		t.Errorf("asking for more than is shared: %v, want a denial with the reason and the previous request put back", err)
	}
	// The previous grant is back: the virtual node is Ready with it again.
	st, err = peering.Peer(ctx, a, b, peering.Options{Resources: resources("3", "4Gi", "20")})
	if err != nil || st.Offloading != peering.StatusReady {
		t.Fatalf("after a denied re-negotiation: %+v, %v", st, err)
	}

	// A Tenant the provider refuses (its signature no longer matches the nonce) reads as an
	// authentication Error, though its credentials were issued; the nonce put back, Established.
	nonceKey := client.ObjectKey{Namespace: st.ProviderTenantNamespace, Name: consts.NonceSecret}
	nonce := &corev1.Secret{}
	if err := b.Client.Get(ctx, nonceKey, nonce); err != nil {
		t.Fatal(err)
	}
	original := nonce.Data[consts.NonceKey]
	setNonce := func(v []byte) {
		t.Helper()
		if err := b.Client.Get(ctx, nonceKey, nonce); err != nil {
			t.Fatal(err)
		}
		nonce.Data[consts.NonceKey] = v
		if err := b.Client.Update(ctx, nonce); err != nil {
			t.Fatal(err)
		}
	}
	authentication := func(want string) {
		t.Helper()
		testenv.Eventually(t, "authentication "+want, 30*time.Second, func(ctx context.Context) bool {
			st, found, err := peering.Observe(ctx, a, b, peering.Options{})
			return err == nil && found && st.Authentication == want
		})
	}
	setNonce([]byte("c29tZXRoaW5nIGVsc2U="))
	authentication(peering.StatusError)
	setNonce(original)
	authentication(peering.StatusEstablished)

	// A namespace offloaded through the peering: unpeering removes its remote namespace too.
	work := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "work"}}
	if err := a.Client.Create(ctx, work); err != nil {
		t.Fatal(err)
	}
	// Gone before the next test on the shared clusters, which would offload it again (the
	// cleanup of twoClusters, after this one, waits for its NamespaceOffloading to go).
	t.Cleanup(func() {
		if err := a.Client.Delete(context.Background(), work); err != nil {
			t.Errorf("cleaning up: %v", err)
		}
	})
	nsoff := &offv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: "work", Name: "offloading"},
		Spec: offv1beta1.NamespaceOffloadingSpec{NamespaceMappingStrategy: offv1beta1.EnforceSameNameMappingStrategyType,
			PodOffloadingStrategy: offv1beta1.RemotePodOffloadingStrategyType}}
	if err := a.Client.Create(ctx, nsoff); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return b.Client.Get(ctx, client.ObjectKey{Name: "work"}, &corev1.Namespace{}) == nil, nil
	})
	if err != nil {
		t.Fatalf("the offloaded namespace on the provider: %v", err)
	}

	start = time.Now()
	if err := peering.Unpeer(ctx, a, b, peering.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("unpeered in %s", time.Since(start).Round(time.Millisecond))
	if err := b.Client.Get(ctx, client.ObjectKey{Name: "work"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the offloaded namespace is still on the provider after Unpeer: %v", err)
	}
	// ForeignClusters go once nothing refers to the peer any more.
	for _, c := range []peering.Cluster{a, b} {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return len(liqoObjects(t, c.Client)) == 0, nil
		})
		if err != nil {
			t.Errorf("left on %s after Unpeer: %v", c.Name, liqoObjects(t, c.Client))
		}
	}
	if _, found, err := peering.Observe(ctx, a, b, peering.Options{}); err != nil || found {
		t.Errorf("Observe after Unpeer: found %v, %v", found, err)
	}
}

// TestBidirectional: peerings in both directions share the tenant namespaces; removing one
// leaves the other Ready.
func TestBidirectional(t *testing.T) {
	a, b, _ := twoClusters(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if _, err := peering.Peer(ctx, a, b, peering.Options{Resources: resources("1", "1Gi", "10")}); err != nil {
		t.Fatal(err)
	}
	if _, err := peering.Peer(ctx, b, a, peering.Options{Resources: resources("1", "1Gi", "10")}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []peering.Cluster{a, b} {
		fcs := &corev1beta1.ForeignClusterList{}
		if err := c.Client.List(ctx, fcs); err != nil || len(fcs.Items) != 1 {
			t.Fatalf("ForeignClusters on %s: %v %v", c.Name, fcs.Items, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			fc := &corev1beta1.ForeignCluster{}
			err := c.Client.Get(ctx, client.ObjectKeyFromObject(&fcs.Items[0]), fc)
			return err == nil && fc.Status.Role == corev1beta1.ConsumerAndProviderRole, nil
		})
		if err != nil {
			t.Errorf("ForeignCluster on %s is not ConsumerAndProvider: %v", c.Name, err)
		}
	}

	if err := peering.Unpeer(ctx, a, b, peering.Options{}); err != nil {
		t.Fatal(err)
	}
	st, found, err := peering.Observe(ctx, b, a, peering.Options{})
	if err != nil || !found || st.Offloading != peering.StatusReady || st.Authentication != peering.StatusEstablished {
		t.Errorf("b→a after removing a→b: found %v, %+v, %v", found, st, err)
	}
	if _, found, _ := peering.Observe(ctx, a, b, peering.Options{}); found {
		t.Error("a→b still found after Unpeer")
	}
	if err := a.Client.Get(ctx, client.ObjectKey{Name: "cl-b"}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("a's virtual node for b after Unpeer: %v", err)
	}
	if err := b.Client.Get(ctx, client.ObjectKey{Name: "cl-a"}, &corev1.Node{}); err != nil {
		t.Errorf("b's virtual node for a after removing a→b: %v", err)
	}
	if err := peering.Unpeer(ctx, b, a, peering.Options{}); err != nil {
		t.Fatal(err)
	}
}
