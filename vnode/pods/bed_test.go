package pods_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/shadowpod"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/pods"
)

const (
	consumerID = "cl-consumer"
	providerID = "cl-provider"
	tenantNs   = "liqo-tenant-cl-provider"
	localNs    = "app"
	remoteNs   = "app-cl-consumer"
	nodeName   = "cl-provider-vk"
)

// bed is a consumer and a provider with the virtual node of the provider running in this
// process, with the pod reflector, and the provider's ShadowPod controller.
type bed struct {
	cons, prov *testenv.Cluster
	consKube   kubernetes.Interface
	provKube   kubernetes.Interface
	runner     *vnode.Runner
}

// bedOptions tune the test bed.
type bedOptions struct {
	// nodePods is the virtual node's and the KWOK node's pod capacity.
	nodePods string
	// componentArgs are added to the schedulers and controller managers (QPS for benchmarks).
	componentArgs []string
	// shadowPodsInChild runs the provider's ShadowPod controller in a child process, so that
	// this process holds only the consumer side (for measuring it).
	shadowPodsInChild bool
	// probeInterval is how often the virtual node probes the provider (and the probe's
	// timeout). Default 1s, for tests that take the provider down.
	probeInterval time.Duration
	log           logr.Logger
	reflector     *pods.Reflector
	// more are reflectors the virtual node runs besides the pod reflector.
	more []vnode.Reflector
}

func newBed(tb testing.TB, o bedOptions) *bed {
	tb.Helper()
	if o.nodePods == "" {
		o.nodePods = "110"
	}
	if o.probeInterval == 0 {
		o.probeInterval = time.Second
	}
	if o.reflector == nil {
		o.reflector = &pods.Reflector{}
	}
	env := testenv.New(tb,
		testenv.ClusterOptions{Name: "consumer", Scheduler: true, ControllerManager: true,
			SchedulerArgs: o.componentArgs, ControllerManagerArgs: o.componentArgs},
		testenv.ClusterOptions{Name: "provider", Scheduler: true, ControllerManager: true, PodCIDR: "10.200.0.0/16",
			SchedulerArgs: o.componentArgs, ControllerManagerArgs: o.componentArgs,
			Nodes: []testenv.NodeOptions{{Name: "provider-node", CPU: "1000", Memory: "4Ti", Pods: o.nodePods}}},
	)
	b := &bed{cons: env.Cluster("consumer"), prov: env.Cluster("provider")}
	// Protobuf, as the cluster's own components talk: the tests' and benchmarks' watches cost the
	// API servers less than they would in JSON.
	b.consKube = kubernetes.NewForConfigOrDie(protobuf(b.cons.Config))
	b.provKube = kubernetes.NewForConfigOrDie(protobuf(b.prov.Config))
	ctx := tb.Context()

	// Provider: the peer ClusterRoles, the consumer's remote namespace bound to
	// liqo-remote-workload, and the ShadowPod controller.
	if _, err := clusteridentity.Ensure(ctx, b.prov.Client, clusteridentity.Config{ClusterID: providerID}); err != nil {
		tb.Fatal(err)
	}
	create(tb, b.prov.Client,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: remoteNs, Labels: map[string]string{
			consts.RemoteNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumerID}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNs, Name: "liqo-remote-workload"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.RemoteWorkloadClusterRole},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: consumerID}}},
	)
	if o.shadowPodsInChild {
		startShadowPodChild(tb, b.prov.KubeconfigPath)
	} else {
		startShadowPodManager(tb, b.prov.Config)
	}

	// Consumer: the namespace mapping as accepted by the provider, the offloaded namespace.
	nm := &offv1beta1.NamespaceMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNs, Name: providerID,
		Labels: map[string]string{consts.RemoteClusterIDLabel: providerID, consts.ReplicationLabel: "true"}},
		Spec: offv1beta1.NamespaceMapSpec{DesiredMapping: map[string]string{localNs: remoteNs}}}
	create(tb, b.cons.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNs}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: localNs}}, nm)
	nm.Status.CurrentMapping = map[string]offv1beta1.RemoteNamespaceStatus{localNs: {RemoteNamespace: remoteNs, Phase: offv1beta1.MappingAccepted}}
	if err := b.cons.Client.Status().Update(ctx, nm); err != nil {
		tb.Fatal(err)
	}

	// The virtual node, with the consumer's identity on the provider.
	kc, err := b.prov.UserKubeconfig(consumerID)
	if err != nil {
		tb.Fatal(err)
	}
	remote, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		tb.Fatal(err)
	}
	b.runner = vnode.NewRunner(b.consKube, vnode.Options{ProbeInterval: o.probeInterval, ConsumerID: consumerID,
		LocalConfig: b.cons.Config, Reflectors: append([]vnode.Reflector{o.reflector}, o.more...)}, o.log)
	vn := &offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNs, Name: nodeName},
		Spec: offv1beta1.VirtualNodeSpec{ClusterID: providerID, ResourceQuota: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"),
			corev1.ResourcePods: resource.MustParse(o.nodePods)}}}}
	if err := b.runner.Ensure(ctx, vn, remote); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.runner.Stop(context.Background(), nodeName) })
	tb.Cleanup(func() {
		if tb.Failed() {
			b.dump(tb)
		}
	})
	b.waitNodeReady(tb, corev1.ConditionTrue)
	return b
}

// dump logs the pods on both sides, the ShadowPods and the Deployments, for a failed test.
func (b *bed) dump(tb testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	podLine := func(p *corev1.Pod) string {
		return fmt.Sprintf("%s uid=%s phase=%s ready=%v ip=%s deleting=%v finalizers=%v labels=%v",
			p.Name, p.UID, p.Status.Phase, isReady(p), p.Status.PodIP, p.DeletionTimestamp != nil, p.Finalizers, p.Labels)
	}
	for _, side := range []struct {
		name string
		c    client.Client
		ns   string
	}{{"consumer", b.cons.Client, localNs}, {"provider", b.prov.Client, remoteNs}} {
		ps := &corev1.PodList{}
		if err := side.c.List(ctx, ps, client.InNamespace(side.ns)); err != nil {
			tb.Logf("dump: %s pods: %v", side.name, err)
		}
		for i := range ps.Items {
			tb.Logf("dump: %s pod %s", side.name, podLine(&ps.Items[i]))
		}
		ds := &appsv1.DeploymentList{}
		if err := side.c.List(ctx, ds, client.InNamespace(side.ns)); err != nil {
			tb.Logf("dump: %s deployments: %v", side.name, err)
		}
		for _, d := range ds.Items {
			tb.Logf("dump: %s deployment %s generation=%d status=%+v", side.name, d.Name, d.Generation, d.Status)
		}
	}
	sps := &offv1beta1.ShadowPodList{}
	if err := b.prov.Client.List(ctx, sps, client.InNamespace(remoteNs)); err != nil {
		tb.Logf("dump: ShadowPods: %v", err)
	}
	for _, sp := range sps.Items {
		tb.Logf("dump: ShadowPod %s uid=%s phase=%s deleting=%v labels=%v", sp.Name, sp.UID, sp.Status.Phase, sp.DeletionTimestamp != nil, sp.Labels)
	}
}

func create(tb testing.TB, c client.Client, objs ...client.Object) {
	tb.Helper()
	for _, o := range objs {
		if err := c.Create(tb.Context(), o); err != nil {
			tb.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func (b *bed) waitNodeReady(tb testing.TB, want corev1.ConditionStatus) {
	tb.Helper()
	testenv.Eventually(tb, "node Ready="+string(want), time.Minute, func(ctx context.Context) bool {
		n, err := b.consKube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == want
			}
		}
		return false
	})

}

// startShadowPodManager runs the provider's ShadowPod controller in this process until the
// test ends.
func startShadowPodManager(tb testing.TB, cfg *rest.Config) {
	tb.Helper()
	mgr, err := shadowPodManager(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	testenv.RunManager(tb, "ShadowPod manager", mgr)
}

// shadowPodManager makes a manager for cfg running the provider's ShadowPod controller, with a
// client rate limit high enough for the benchmarks.
func shadowPodManager(cfg *rest.Config) (ctrl.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	mgr, err := testenv.NewManager(cfg, mustScheme())
	if err != nil {
		return nil, err
	}
	if err := (&shadowpod.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("liqo-shadowpod")}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return mgr, nil
}

const childKubeconfigEnv = "PODS_TEST_SHADOWPOD_KUBECONFIG"

// TestShadowPodManagerProcess is not a test of its own: the benchmark runs it in a child
// process, where it runs the provider's ShadowPod controller until it is killed.
func TestShadowPodManagerProcess(t *testing.T) {
	path := os.Getenv(childKubeconfigEnv)
	if path == "" {
		t.Skip("helper process of the benchmark")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := shadowPodManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Start(t.Context()); err != nil {
		t.Error(err)
	}
}

// startShadowPodChild runs the provider's ShadowPod controller in a child process until the
// test ends.
func startShadowPodChild(tb testing.TB, kubeconfig string) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestShadowPodManagerProcess$")
	cmd.Env = append(os.Environ(), childKubeconfigEnv+"="+kubeconfig)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if tb.Failed() {
			tb.Logf("ShadowPod controller process:\n%s", out.String())
		}
	})
}

// protobuf is a copy of cfg that sends and accepts protobuf (built-in kinds only).
func protobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return c
}
