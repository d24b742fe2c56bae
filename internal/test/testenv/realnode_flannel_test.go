package testenv_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestRealNodesFlannel: a cluster with two real nodes and flannel (VXLAN, kube-subnet-mgr).
// Each node has its own namespace, address and pod CIDR (allocated by the controller manager,
// leased by flannel); a pod on each node reaches the other's pod IP over HTTP across the nodes;
// a ClusterIP Service backed by the pod on the other node answers (kube-proxy), from a pod and
// from the node; after Stop nothing is left.
func TestRealNodesFlannel(t *testing.T) {
	needRealNode(t)
	if _, err := testenv.FlannelBinDir(); err != nil {
		t.Skipf("skipping the flannel test: %v", err)
	}
	start := time.Now()
	env, err := testenv.Start(t.Context(), testenv.ClusterOptions{Name: "mn", RealNodes: 2})
	if err != nil {
		t.Fatalf("starting a cluster with two real nodes: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = env.Stop()
		}
	})
	c := env.Cluster("mn")
	if len(c.RealNodes) != 2 || c.RealNode != c.RealNodes[0] {
		t.Fatalf("real nodes %v, want 2 with RealNode the first", c.RealNodes)
	}
	a, b := c.RealNodes[0], c.RealNodes[1]
	t.Logf("cluster with two real nodes and flannel up in %s (nodes Ready %s and %s after containerd's start)",
		time.Since(start).Round(time.Millisecond), a.ReadyIn.Round(time.Millisecond), b.ReadyIn.Round(time.Millisecond))
	checkFlannelNodes(t, c, a, b)
	logRSS(t, a, b)

	podA := runningPods(t, c, createOn(t, c, "web-a", a.Name), 90*time.Second)[0]
	podB := runningPods(t, c, createOn(t, c, "web-b", b.Name), 90*time.Second)[0]
	t.Logf("pods %s (%s on %s) and %s (%s on %s) Running", podA.Name, podA.Status.PodIP, a.Name, podB.Name, podB.Status.PodIP, b.Name)
	for _, p := range []corev1.Pod{podA, podB} {
		if ip := net.ParseIP(p.Status.PodIP); ip == nil || !cidrContains(t, nodeOf(p, a, b).PodCIDR, ip) {
			t.Errorf("pod %s's IP %s is not in its node's pod CIDR %s", p.Name, p.Status.PodIP, nodeOf(p, a, b).PodCIDR)
		}
	}
	// Pod to pod across the nodes, both ways (VXLAN between the nodes' addresses).
	for _, x := range [][2]corev1.Pod{{podA, podB}, {podB, podA}} {
		if out, err := kubectl(t.Context(), t, c, "exec", x[0].Name, "--", "/test-http", "get", podURL(x[1], "/")); err != nil || strings.TrimSpace(out) != x[1].Name {
			t.Errorf("GET %s from pod %s: %q, %v; want %s", podURL(x[1], "/"), x[0].Name, out, err, x[1].Name)
		}
	}
	// A Service backed by the pod on node b, from the pod and from the node a (kube-proxy on a).
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-b", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web-b"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(testenv.TestHTTPPort)}}},
	}
	if err := c.Client.Create(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	testenv.Eventually(t, "Service "+url+" to answer from pod "+podA.Name+" and node "+a.Name, 30*time.Second, func(ctx context.Context) bool {
		out, err := kubectl(ctx, t, c, "exec", podA.Name, "--", "/test-http", "get", url)
		if err != nil || strings.TrimSpace(out) != podB.Name {
			return false
		}
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		body, err := httpGet(ctx, a, url)
		return err == nil && body == podB.Name
	})

	podNetns := append(a.PodNetns(t.Context()), b.PodNetns(t.Context())...)
	stopped = true
	if err := env.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	assertNoLeftovers(t, env, c.RealNodes, podNetns)
}

// checkFlannelNodes checks that the nodes have their own namespace and address, distinct pod
// CIDRs in the cluster's, routed from the host, and flannel's VXLAN lease annotations.
func checkFlannelNodes(t *testing.T, c *testenv.Cluster, a, b *testenv.RealNode) {
	t.Helper()
	if a.Netns == b.Netns || a.IP == b.IP || a.PodCIDR == b.PodCIDR {
		t.Errorf("nodes share a namespace, address or pod CIDR: %s %s %s, %s %s %s", a.Netns, a.IP, a.PodCIDR, b.Netns, b.IP, b.PodCIDR)
	}
	for _, n := range []*testenv.RealNode{a, b} {
		node := &corev1.Node{}
		if err := c.Client.Get(t.Context(), client.ObjectKey{Name: n.Name}, node); err != nil {
			t.Fatal(err)
		}
		if node.Spec.PodCIDR != n.PodCIDR || !strings.HasSuffix(n.PodCIDR, "/24") || !cidrContains(t, "10.244.0.0/16", net.ParseIP(strings.Split(n.PodCIDR, "/")[0])) {
			t.Errorf("node %s: spec.podCIDR %q, RealNode.PodCIDR %q; want the same /24 of 10.244.0.0/16", n.Name, node.Spec.PodCIDR, n.PodCIDR)
		}
		if node.Annotations["flannel.alpha.coreos.com/backend-type"] != "vxlan" || node.Annotations["flannel.alpha.coreos.com/public-ip"] != n.IP {
			t.Errorf("node %s: flannel's annotations %v; want backend vxlan and public IP %s", n.Name, node.Annotations, n.IP)
		}
		if !n.RoutedFromHost {
			t.Errorf("node %s: its pod CIDR %s is not routed from the host", n.Name, n.PodCIDR)
		}
		if out, err := n.Command(t.Context(), "ip", "-d", "link", "show", "flannel.1").CombinedOutput(); err != nil || !strings.Contains(string(out), "vxlan id 1") {
			t.Errorf("node %s: flannel.1 is not a VXLAN link: %s, %v", n.Name, out, err)
		}
	}
}

// logRSS logs the resident memory of each node's processes and their sum.
func logRSS(t *testing.T, nodes ...*testenv.RealNode) {
	t.Helper()
	for _, n := range nodes {
		rss, err := n.RSS()
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		var parts []string
		for name, v := range rss {
			total += v
			parts = append(parts, name+" "+strconv.FormatInt(v>>20, 10)+" MiB")
		}
		t.Logf("node %s: RSS %d MiB (%s)", n.Name, total>>20, strings.Join(parts, ", "))
	}
}

// nodeOf returns the node of nodes that pod p runs on.
func nodeOf(p corev1.Pod, nodes ...*testenv.RealNode) *testenv.RealNode {
	for _, n := range nodes {
		if n.Name == p.Spec.NodeName {
			return n
		}
	}
	return nodes[0]
}

// cidrContains reports whether cidr contains ip.
func cidrContains(t *testing.T, cidr string, ip net.IP) bool {
	t.Helper()
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		t.Errorf("pod CIDR %q: %v", cidr, err)
		return false
	}
	return n.Contains(ip)
}
