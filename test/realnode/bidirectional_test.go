package realnode

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestBidirectionalOnRealNodes: examples/bidirectional on two clusters whose nodes are real
// kubelets (the chart in both), with the tunnel's gateway server on a NodePort (the default
// LoadBalancer gets no address there): terraform apply makes both directions, which share one
// tunnel (one gateway server pod, one client pod, on the real nodes); each cluster's pod
// reaches, over HTTP through the tunnel, a pod it offloaded to the other; a plan after apply
// changes nothing, nor does the import of both peerings by ID; destroying one direction
// leaves the other's virtual node Ready; destroy and helm uninstall leave nothing.
func TestBidirectionalOnRealNodes(t *testing.T) {
	requireRealNodes(t)
	tc := peeringCase{name: "bidirectional", consumerNode: "10.232.0.0/16", providerNode: "10.233.0.0/16"}
	h, consumer, provider, before := realNodePair(t, tc)
	tf := newTerraformRun(t)
	ctx := t.Context()
	vars := []string{"consumer_kubeconfig=" + consumer.KubeconfigPath, "provider_kubeconfig=" + provider.KubeconfigPath,
		"gateway_service_type=NodePort",
		// Each real node has 2 CPUs, and each cluster shares half of it.
		"cpu=1", "memory=1Gi", "pods=20"}
	_, applied := tf.mustRun(t, "bidirectional", "apply", vars...)
	t.Logf("terraform apply examples/bidirectional: %s to both virtual nodes Ready over one tunnel", applied.Round(100*time.Millisecond))
	servers, clients := 0, 0
	for _, c := range []*testenv.Cluster{consumer, provider} {
		servers += len(gatewayPods(ctx, t, c, "gateway-server"))
		clients += len(gatewayPods(ctx, t, c, "gateway-client"))
	}
	if servers != 1 || clients != 1 {
		t.Errorf("%d gateway server and %d client pods running on the real nodes, want one tunnel: 1 and 1", servers, clients)
	}

	expectReach(ctx, t, consumer, provider, "there")
	expectReach(ctx, t, provider, consumer, "back")

	out, _ := tf.mustRun(t, "bidirectional", "plan", vars...)
	if !strings.Contains(out, "No changes.") {
		t.Errorf("plan after apply: want no changes\n%s", out)
	}
	var varArgs []string
	for _, v := range vars {
		varArgs = append(varArgs, "-var", v)
	}
	testenv.ExpectImportsQuiet(t, filepath.Join(tf.root, "examples"), "bidirectional", filepath.Join(tf.state, "bidirectional.tfstate"),
		varArgs, nil, func(dir string, args ...string) (string, int) {
			cmd := exec.Command("terraform", append([]string{"-chdir=" + dir}, args...)...)
			cmd.Env = tf.env
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				return string(out), exit.ExitCode()
			}
			if err != nil {
				t.Fatalf("terraform %v: %v", args, err)
			}
			return string(out), 0
		})

	_, one := tf.mustRun(t, "bidirectional", "destroy", append(vars, "-target=liqo_peering.provider_to_consumer")...)
	t.Logf("destroying one direction: %s", one.Round(100*time.Millisecond))
	testenv.Eventually(t, "the remaining direction's virtual node Ready", time.Minute, func(ctx context.Context) bool {
		return nodeReady(ctx, consumer, provider.Name)
	})
	_, destroyed := tf.mustRun(t, "bidirectional", "destroy", vars...)
	t.Logf("destroying the rest: %s", destroyed.Round(100*time.Millisecond))
	for _, c := range []*testenv.Cluster{consumer, provider} {
		testenv.Eventually(t, c.Name+": no gateway pod", time.Minute, func(ctx context.Context) bool {
			return len(gatewayPods(ctx, t, c, "gateway-server"))+len(gatewayPods(ctx, t, c, "gateway-client")) == 0
		})
	}
	uninstallLeavingNothing(t, h, before)
}

// expectReach offloads a Deployment of one pod from cluster from to cluster to (namespace
// name, through the virtual node standing for to) and checks that a pod on from's real node
// gets its hostname over HTTP, through the tunnel, at the address from shows for it.
func expectReach(ctx context.Context, t testing.TB, from, to *testenv.Cluster, name string) {
	t.Helper()
	start := time.Now()
	ns := offloadNamespace(ctx, t, from, name)
	labels := map[string]string{"app": name}
	if err := from.Client.Create(ctx, httpDeployment(ns, "web", labels, 1, nil)); err != nil {
		t.Fatal(err)
	}
	var offloaded []corev1.Pod
	testenv.Eventually(t, from.Name+"'s pod offloaded to "+to.Name+" Running", 3*time.Minute, func(ctx context.Context) bool {
		offloaded = podsOn(ctx, from, ns, labels, to.Name)
		return len(offloaded) == 1
	})
	local := createNamespace(ctx, t, from, name+"-client")
	clientLabels := map[string]string{"app": name + "-client"}
	if err := from.Client.Create(ctx, httpDeployment(local, "client", clientLabels, 1,
		map[string]string{"kubernetes.io/hostname": from.RealNode.Name})); err != nil {
		t.Fatal(err)
	}
	var clients []corev1.Pod
	testenv.Eventually(t, from.Name+"'s client pod Running", 2*time.Minute, func(ctx context.Context) bool {
		clients = podsOn(ctx, from, local, clientLabels, from.RealNode.Name)
		return len(clients) == 1
	})
	url := "http://" + net.JoinHostPort(offloaded[0].Status.PodIP, "8080") + "/"
	var body string
	testenv.Eventually(t, from.Name+" pod GET "+url+" through the tunnel", time.Minute, func(context.Context) bool {
		var err error
		body, err = kubectl(from, "-n", local, "exec", clients[0].Name, "--", "/test-http", "get", url)
		return err == nil
	})
	if strings.TrimSpace(body) != offloaded[0].Name {
		t.Errorf("GET %s from %s: %q, want the offloaded pod's hostname %s", url, from.Name, body, offloaded[0].Name)
	}
	t.Logf("%s -> pod offloaded to %s at %s: answered (%s from the offloading)", from.Name, to.Name, offloaded[0].Status.PodIP,
		time.Since(start).Round(100*time.Millisecond))
	for _, n := range []string{ns, local} {
		if err := from.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the offloaded pod gone from "+to.Name, 2*time.Minute, func(ctx context.Context) bool {
		return len(runningContainers(ctx, to, to.RealNode.Name)) == 0
	})
}

// nodeReady tells whether node name of c exists and is Ready.
func nodeReady(ctx context.Context, c *testenv.Cluster, name string) bool {
	n := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return false
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
