package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv/upstream"
)

// upstreamCluster is the cluster that runs upstream Liqo v1.2.0's controllers in the mixed
// tests; its name is its cluster ID.
const upstreamCluster = "upstream"

// mixedBed is the mixed test bed: the sandbox's clusters run our controllers, one more cluster
// runs upstream's (controller manager, CRD replicator and webhook as processes with the
// arguments its chart gives them, networking disabled: docs/upstream-testbed.md).
type mixedBed struct {
	*sandboxRun
	up      *testenv.Cluster
	liqoctl string
}

// startMixedBed starts the sandbox (consumer and provider) and the upstream cluster, with a
// KWOK node to share, and upstream's components on it. It skips without upstream's binaries.
func startMixedBed(t *testing.T) *mixedBed {
	t.Helper()
	upstream.BinDir(t)
	bin := liqoctlBin(t)
	// The sandbox's provider plays the logs and exec of the pods offloaded to it, as upstream's does.
	r := startSandbox(t, 2, "-"+sandbox.KWOKConfigFlag, "provider="+kwokWorkloads(t, "provider"))
	opts := upstream.ClusterOptions(t, upstreamCluster)
	opts.Scheduler, opts.ControllerManager, opts.KubeletAPI, opts.PodCIDR = true, true, true, "10.210.0.0/16"
	opts.Nodes = []testenv.NodeOptions{{Name: upstreamCluster + "-node-1", CPU: "8", Memory: "16Gi", PodCIDR: "10.210.1.0/24"}}
	opts.KWOKConfigs = []string{kwokWorkloads(t, upstreamCluster)}
	up := testenv.New(t, opts).Cluster(upstreamCluster)
	// The address peers reach its API server at: the chart's value for a cluster whose control
	// plane runs on no node (upstream's controller manager otherwise looks for a control-plane
	// node's address).
	objs := upstream.Render(t, upstreamCluster, "apiServer.address="+up.Config.Host)
	upstream.Install(t, up, objs)
	upstream.StartWebhook(t, up, objs)
	upstream.StartControllerManager(t, up, objs)
	upstream.StartCRDReplicator(t, up, objs)
	r.clients[upstreamCluster] = up.Client
	b := &mixedBed{sandboxRun: r, up: up, liqoctl: bin}
	t.Cleanup(func() {
		if t.Failed() {
			b.logTerminating(t)
			b.logManagerErrors(t)
		}
	})
	return b
}

// expectNothingLeft checks the sandbox's clusters as sandboxRun.expectNothingLeft does, and the
// upstream cluster for the same objects but its ForeignCluster: upstream's controllers keep a
// peer's ForeignCluster after `liqoctl unpeer` (nothing in v1.2.0 deletes it; its modules'
// status is logged, as upstream's controller last wrote it).
func (b *mixedBed) expectNothingLeft(t *testing.T) {
	t.Helper()
	delete(b.clients, upstreamCluster)
	defer func() { b.clients[upstreamCluster] = b.up.Client }()
	b.sandboxRun.expectNothingLeft(t)
	left, err := leftovers(t.Context(), b.up.Client)
	if err != nil {
		t.Fatal(err)
	}
	left = slices.DeleteFunc(left, func(s string) bool { return strings.HasSuffix(s, " foreignclusters") })
	if len(left) > 0 {
		t.Errorf("left on %s: %v", upstreamCluster, left)
	}
	fcs := &corev1beta1.ForeignClusterList{}
	if err := b.up.Client.List(t.Context(), fcs); err != nil {
		t.Fatal(err)
	}
	for _, fc := range fcs.Items {
		m := fc.Status.Modules
		t.Logf("upstream's ForeignCluster %s kept after unpeer: modules enabled: networking %t, authentication %t, offloading %t",
			fc.Name, m.Networking.Enabled, m.Authentication.Enabled, m.Offloading.Enabled)
	}
}

// logManagerErrors logs the last error lines of our controller managers' logs in the sandbox.
func (b *mixedBed) logManagerErrors(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(b.state, "logs", "*controller-manager.log"))
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		var errs []string
		for line := range strings.Lines(string(data)) {
			if strings.Contains(line, "\"level\":\"error\"") || strings.Contains(line, "ERROR") || strings.HasPrefix(line, "E1") {
				errs = append(errs, line)
			}
		}
		t.Logf("%s: %d error lines, the last:\n%s", filepath.Base(l), len(errs), strings.Join(errs[max(0, len(errs)-30):], ""))
	}
}

// logTerminating logs the namespaces still Terminating in every cluster, with their conditions
// (what their deletion waits for).
func (b *mixedBed) logTerminating(t *testing.T) {
	for name, c := range b.clients {
		nss := &corev1.NamespaceList{}
		if err := c.List(context.Background(), nss); err != nil {
			t.Logf("listing the namespaces of %s: %v", name, err)
			continue
		}
		for _, ns := range nss.Items {
			if ns.Status.Phase == corev1.NamespaceTerminating {
				t.Logf("namespace %s of %s is Terminating: %+v", ns.Name, name, ns.Status.Conditions)
			}
		}
	}
}

// mixedLogLine is what the web containers of namespace mixed on cluster log, and
// mixedExecOutput what `cat marker` prints in them (KWOK plays their logs from a file and runs
// their exec commands in a folder: kwokWorkloads).
func mixedLogLine(cluster string) string    { return "hello from a pod on " + cluster }
func mixedExecOutput(cluster string) string { return "exec'd on " + cluster }

// kwokWorkloads writes a KWOK configuration that gives the web containers of namespace mixed a
// log of one line, mixedLogLine(cluster), and runs their exec commands in a folder holding the
// file marker (mixedExecOutput(cluster)); it returns its path.
func kwokWorkloads(t *testing.T, cluster string) string {
	t.Helper()
	dir := t.TempDir()
	logFile, workDir := filepath.Join(dir, "web.log"), filepath.Join(dir, "web")
	line := time.Now().UTC().Format(time.RFC3339Nano) + " stdout F " + mixedLogLine(cluster) + "\n"
	if err := os.WriteFile(logFile, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(workDir, "marker"), []byte(mixedExecOutput(cluster)), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "kwok-workloads.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: web-logs
spec:
  selector:
    matchNamespaces: [mixed]
  logs:
  - containers: [web]
    logsFile: %s
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: web-exec
spec:
  selector:
    matchNamespaces: [mixed]
  execs:
  - containers: [web]
    local:
      workDir: %s
`, logFile, workDir), 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}

// kubeconfig returns the kubeconfig path of a sandbox cluster or of the upstream one.
func (b *mixedBed) kubeconfig(cluster string) string {
	if cluster == upstreamCluster {
		return b.up.KubeconfigPath
	}
	return filepath.Join(b.state, cluster+".kubeconfig")
}

// client returns the client of a sandbox cluster or of the upstream one.
func (b *mixedBed) client(cluster string) client.Client { return b.clients[cluster] }

// run runs upstream liqoctl against cluster.
func (b *mixedBed) run(t *testing.T, cluster string, args ...string) []byte {
	t.Helper()
	return testenv.RunLiqoctl(t, b.liqoctl, b.kubeconfig(cluster), args...)
}

// TestUpstreamConsumerOurProvider: a cluster running upstream Liqo v1.2.0's controllers
// consumes from one running ours, peered with upstream's `liqoctl peer --networking-disabled`,
// with no hand edit. The provider signs the consumer's slice certificate; upstream's controller
// manager makes the virtual node and its virtual kubelet's Deployment, whose container runs here
// as a process (as its ServiceAccount); the node is Ready; `liqoctl info peer` is healthy on
// both sides; a namespace offloaded with `liqoctl offload namespace` runs a Deployment's pods on
// our provider (Running back on the consumer, through our ShadowPod controller and secret
// policy, which accept upstream's reflection labels), and its Service is reflected; unoffload
// and unpeer leave nothing on our provider, and a second peering works after it.
func TestUpstreamConsumerOurProvider(t *testing.T) {
	b := startMixedBed(t)
	for round := 1; round <= 2; round++ {
		t.Logf("round %d: peering", round)
		vk := b.peerUpstreamConsumer(t)
		b.expectInfoPeer(t, upstreamCluster, "provider", "Provider")
		b.expectInfoPeer(t, "provider", upstreamCluster, "Consumer")
		if round == 1 {
			b.offloadAndRun(t, upstreamCluster, "provider", "provider")
		}
		b.run(t, upstreamCluster, "unpeer", "--remote-kubeconfig", b.kubeconfig("provider"), "--delete-namespaces", "--skip-confirm", "--timeout", "3m")
		vk.Stop()
		b.expectNothingLeft(t)
	}
	b.peerWithTerraform(t, upstreamCluster, "provider", func() *upstream.Process {
		return upstream.StartVirtualKubelet(t, b.up, "liqo-tenant-provider", "provider")
	})
}

// peerUpstreamConsumer peers the upstream cluster (consumer) with the sandbox's provider and
// runs the virtual kubelet upstream's controller manager deploys, until the virtual node is
// Ready.
func (b *mixedBed) peerUpstreamConsumer(t *testing.T) *upstream.Process {
	t.Helper()
	start := time.Now()
	b.run(t, upstreamCluster, "peer", "--remote-kubeconfig", b.kubeconfig("provider"), "--networking-disabled", "--timeout", "3m")
	t.Logf("liqoctl peer returned in %v", time.Since(start).Round(time.Millisecond))
	vk := upstream.StartVirtualKubelet(t, b.up, "liqo-tenant-provider", "provider")
	testenv.Poll(t, "virtual node provider Ready on the upstream cluster", 2*time.Minute, func(context.Context) (bool, error) {
		return b.nodeReady(t, upstreamCluster, "provider"), nil
	})
	t.Logf("virtual node Ready %v after liqoctl peer started", time.Since(start).Round(time.Millisecond))
	return vk
}

// peerWithTerraform applies examples/peering (liqo_peering) from consumer to provider, networking
// off, while startVK (if any) runs the consumer's virtual kubelet; then checks that the virtual
// node is Ready, liqoctl sees the peering healthy on both sides, plans are quiet, and destroy
// leaves nothing.
func (b *mixedBed) peerWithTerraform(t *testing.T, consumer, provider string, startVK func() *upstream.Process) {
	t.Helper()
	args := b.tfArgs("peering", "consumer_kubeconfig="+b.kubeconfig(consumer), "provider_kubeconfig="+b.kubeconfig(provider), "networking=false")
	type result struct {
		out  string
		took time.Duration
		code int
	}
	done := make(chan result, 1)
	go func() {
		out, took, code := b.tf(t, "peering", append([]string{"apply", "-auto-approve"}, args...)...)
		done <- result{out, took, code}
	}()
	var vk *upstream.Process
	var res result
	// Upstream's consumer makes the virtual kubelet's Deployment once the slice is granted, and
	// apply waits for the node: run it then, unless apply ends first (its output says why).
	for waiting := true; waiting; {
		select {
		case res = <-done:
			waiting = false
		case <-time.After(time.Second):
			if startVK != nil && vk == nil && upstream.VirtualKubeletDeployed(t.Context(), b.up, "liqo-tenant-"+provider, provider) {
				vk = startVK()
			}
		}
	}
	if res.code != 0 {
		t.Fatalf("terraform apply of examples/peering from %s to %s: exit %d\n%s", consumer, provider, res.code, res.out)
	}
	t.Logf("liqo_peering from %s to %s applied in %v", consumer, provider, res.took.Round(time.Millisecond))
	if !b.nodeReady(t, consumer, provider) {
		t.Errorf("virtual node %s on %s not Ready after apply", provider, consumer)
	}
	b.expectInfoPeer(t, consumer, provider, "Provider")
	b.expectInfoPeer(t, provider, consumer, "Consumer")
	b.expectQuietPlans(t, "peering", args...)
	b.mustTF(t, "peering", append([]string{"destroy", "-auto-approve"}, args...)...)
	if vk != nil {
		vk.Stop()
	}
	b.expectNothingLeft(t)
}

// expectInfoPeer: `liqoctl info peer <peer> -o json` on cluster names peer in role, with
// authentication Healthy and, on the consumer, one accepted slice and a healthy virtual node.
func (b *mixedBed) expectInfoPeer(t *testing.T, cluster, peer, role string) {
	t.Helper()
	testenv.ExpectInfoPeer(t, b.liqoctl, b.kubeconfig(cluster), peer, role)
}

// offloadAndRun offloads namespace mixed of consumer to provider (virtual node node on the
// consumer) and checks that a Deployment's pods run there, its Service is reflected and `kubectl
// logs` and `kubectl exec` reach them through the virtual node; then unoffloads it.
func (b *mixedBed) offloadAndRun(t *testing.T, consumer, provider, node string) {
	t.Helper()
	ctx := t.Context()
	cons, prov := b.client(consumer), b.client(provider)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mixed"}}
	if err := cons.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	b.run(t, consumer, "offload", "namespace", "mixed", "--namespace-mapping-strategy", "EnforceSameName",
		"--pod-offloading-strategy", "Remote", "--timeout", "2m")
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "mixed"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/e2e-test-images/agnhost:2.53",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "mixed"}, Spec: corev1.ServiceSpec{
		Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}
	for _, o := range []client.Object{dep, svc} {
		if err := cons.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Poll(t, fmt.Sprintf("Deployment mixed/web's 2 pods Running on %s, on virtual node %s", consumer, node), 3*time.Minute,
		func(ctx context.Context) (bool, error) { return podsRunning(ctx, cons, "mixed", labels, node, 2) })
	testenv.Poll(t, "the 2 offloaded pods Running on "+provider+", in namespace mixed", time.Minute,
		func(ctx context.Context) (bool, error) { return podsRunning(ctx, prov, "mixed", labels, "", 2) })
	testenv.Poll(t, "Service mixed/web reflected to "+provider, time.Minute, func(ctx context.Context) (bool, error) {
		return prov.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{}) == nil, nil
	})
	b.expectLogsAndExec(t, consumer, provider, labels)
	b.run(t, consumer, "unoffload", "namespace", "mixed", "--skip-confirm", "--timeout", "2m")
	testenv.Poll(t, "namespace mixed gone from "+provider+" after unoffload", 2*time.Minute, func(ctx context.Context) (bool, error) {
		err := prov.Get(ctx, client.ObjectKey{Name: "mixed"}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// expectLogsAndExec: `kubectl logs` of an offloaded pod on the consumer (the API server asks
// the virtual node's kubelet endpoint) shows what its copy logs on the provider, and `kubectl
// exec` runs in its copy's container there.
func (b *mixedBed) expectLogsAndExec(t *testing.T, consumer, provider string, labels map[string]string) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := b.client(consumer).List(t.Context(), pods, client.InNamespace("mixed"), client.MatchingLabels(labels)); err != nil || len(pods.Items) == 0 {
		t.Fatalf("listing the web pods on %s: %v (%d)", consumer, err, len(pods.Items))
	}
	kubectl := func(ctx context.Context, args ...string) (string, error) {
		args = append([]string{"--kubeconfig", b.kubeconfig(consumer), "-n", "mixed"}, args...)
		out, err := exec.CommandContext(ctx, filepath.Join(mustBinDir(t), "kubectl"), args...).CombinedOutput()
		return string(out), err
	}
	pod := pods.Items[0].Name
	// Right after a node joined, its serving certificate may still be on its way (the virtual
	// kubelet asks for it when it starts; the CSR is approved once the Node has its address):
	// as a user would, ask again.
	start := time.Now()
	for _, c := range []struct {
		what, want string
		args       []string
	}{
		{"kubectl logs", mixedLogLine(provider), []string{"logs", pod, "-c", "web"}},
		{"kubectl exec cat marker", mixedExecOutput(provider), []string{"exec", pod, "-c", "web", "--", "cat", "marker"}},
	} {
		testenv.Poll(t, c.what+" of pod mixed/"+pod+" on "+consumer, 30*time.Second, func(ctx context.Context) (bool, error) {
			out, err := kubectl(ctx, c.args...)
			if err != nil {
				return false, fmt.Errorf("%w: %s", err, out)
			}
			if !strings.Contains(out, c.want) {
				return false, fmt.Errorf("output %q, want %q in it", out, c.want)
			}
			return true, nil
		})
	}
	t.Logf("logs and exec of an offloaded pod through the virtual node within %v", time.Since(start).Round(time.Millisecond))
}

// podsRunning reports whether n pods labelled labels run in namespace ns (on node, when set).
func podsRunning(ctx context.Context, c client.Client, ns string, labels map[string]string, node string, n int) (bool, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		return false, err
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && (node == "" || p.Spec.NodeName == node) {
			running++
		}
	}
	if running != n {
		return false, fmt.Errorf("%d of %d pods Running (of %d)", running, n, len(pods.Items))
	}
	return true, nil
}

// TestOurConsumerUpstreamProvider: a cluster running our controllers consumes from one running
// upstream Liqo v1.2.0's, peered with upstream's `liqoctl peer --networking-disabled`, with no
// hand edit. Our consumer fills the slice's certificate request; upstream's provider signs it;
// our virtual kubelet authenticates with that slice certificate (the Group upstream binds its
// liqo-virtual-kubelet-remote role to) and the virtual node is Ready; `liqoctl info peer` is
// healthy on both sides; a namespace offloaded with `liqoctl offload namespace` runs a
// Deployment's pods on upstream's provider (its webhook accepts our ShadowPods' labels), Running
// back on our consumer, its Service reflected, and `kubectl logs`/`exec` reaching them through our virtual node;
// unoffload and unpeer leave nothing on our consumer, and a second peering works after it.
func TestOurConsumerUpstreamProvider(t *testing.T) {
	b := startMixedBed(t)
	for round := 1; round <= 2; round++ {
		t.Logf("round %d: peering", round)
		start := time.Now()
		b.run(t, "consumer", "peer", "--remote-kubeconfig", b.kubeconfig(upstreamCluster), "--networking-disabled", "--timeout", "3m")
		t.Logf("liqoctl peer returned in %v", time.Since(start).Round(time.Millisecond))
		testenv.Poll(t, "virtual node upstream Ready on our consumer", 2*time.Minute, func(context.Context) (bool, error) {
			return b.nodeReady(t, "consumer", upstreamCluster), nil
		})
		b.expectInfoPeer(t, "consumer", upstreamCluster, "Provider")
		b.expectInfoPeer(t, upstreamCluster, "consumer", "Consumer")
		if round == 1 {
			b.offloadAndRun(t, "consumer", upstreamCluster, upstreamCluster)
		}
		b.run(t, "consumer", "unpeer", "--remote-kubeconfig", b.kubeconfig(upstreamCluster), "--delete-namespaces", "--skip-confirm", "--timeout", "3m")
		b.expectNothingLeft(t)
	}
	b.peerWithTerraform(t, "consumer", upstreamCluster, nil)
}
