package realnode

import (
	"context"
	"fmt"
	"maps"
	"net"
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

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// fabricCase is one pair of two-node clusters to peer.
type fabricCase struct {
	name string
	// consumerPods and providerPods are where kube-controller-manager takes each node's pod
	// CIDR from (flannel's leases); declared is the pod CIDR both clusters declare to Liqo
	// (empty: each its own), which the gateways remap when it is the same.
	consumerPods, providerPods, declared string
	// virtualKubelet is the consumer's virtual-kubelet mode (chart value virtualKubelet.mode).
	virtualKubelet string
	// churn: once traffic flows, a consumer node is added, then removed, then the consumer's
	// gateway moved to its other node (fabricChurn).
	churn bool
}

// TestPeeringAcrossNodes peers two clusters of two real nodes each, with flannel (VXLAN) as
// their CNI, through terraform apply of examples/peering: the gateways run on one node of each
// cluster, and the fabric agents (the liqo-fabric DaemonSet) route the other node's pods into
// them. From a pod on each consumer node, HTTP reaches an offloaded pod on each provider node
// (so the provider's answer from its node without the gateway finds its way back), and a
// consumer Service backed by the offloaded pods answers; an offloaded pod reaches a consumer pod
// on the consumer's node without the gateway. Once with distinct pod CIDRs, once with the same
// one (remapped). With distinct CIDRs, the fabric then follows churn (fabricChurn): a consumer
// node added at runtime, then removed as a failed machine, then the consumer's gateway moved to
// its other node. Destroy and helm uninstall leave nothing on any node.
func TestPeeringAcrossNodes(t *testing.T) {
	requireFlannelNodes(t)
	for _, tc := range []fabricCase{
		{name: "distinct pod CIDRs", consumerPods: "10.232.0.0/16", providerPods: "10.233.0.0/16", virtualKubelet: "inprocess", churn: true},
		{name: "same pod CIDR, remapped", consumerPods: "10.232.0.0/17", providerPods: "10.232.128.0/17", declared: "10.232.0.0/16",
			virtualKubelet: "deployment"},
	} {
		t.Run(tc.name, func(t *testing.T) { peerAcrossNodes(t, tc) })
	}
}

// requireFlannelNodes skips tb unless real nodes with flannel can run here.
func requireFlannelNodes(tb testing.TB) {
	tb.Helper()
	requireRealNodes(tb)
	if _, err := testenv.FlannelBinDir(); err != nil {
		tb.Skip(err)
	}
}

// twoNodePair starts tc's clusters with two real nodes each and installs the chart into both;
// it returns what each node's network holds before the peering.
func twoNodePair(t testing.TB, tc fabricCase) (h *chart.Helper, consumer, provider *testenv.Cluster, before map[*testenv.RealNode][]string) {
	t.Helper()
	h = chart.New(t)
	archives := componentArchives(t)
	env := testenv.New(t,
		testenv.ClusterOptions{Name: "consumer", PodCIDR: tc.consumerPods, RealNodes: 2, RealNode: &testenv.RealNodeOptions{Images: archives}},
		testenv.ClusterOptions{Name: "provider", PodCIDR: tc.providerPods, RealNodes: 2, RealNode: &testenv.RealNodeOptions{Images: archives}})
	consumer, provider = env.Cluster("consumer"), env.Cluster("provider")
	dumpOnFailure(t, consumer, provider)
	before = map[*testenv.RealNode][]string{}
	for c, pods := range map[*testenv.Cluster]string{consumer: tc.consumerPods, provider: tc.providerPods} {
		for _, n := range c.RealNodes {
			before[n] = nodeNetwork(t, n)
		}
		values := installValues(c, c.Name)
		values["podCIDR"] = pods
		if tc.declared != "" {
			values["podCIDR"] = tc.declared
		}
		if c == consumer {
			values["virtualKubelet"] = map[string]any{"mode": tc.virtualKubelet}
		}
		installChart(t.Context(), t, h, c, values)
	}
	return h, consumer, provider, before
}

// acrossNodes is a peering of two multi-node clusters (peerUpAcrossNodes) with an offloaded
// pod on each provider node and a client pod on each consumer node.
type acrossNodes struct {
	consumer, provider     *testenv.Cluster
	tf                     *terraformRun
	vars                   []string
	consumerGW, providerGW *testenv.RealNode
	ns, local              string                // the offloaded pods' namespace, the clients'
	remote                 map[string]corev1.Pod // provider node → its offloaded pod, as the provider sees it
	offloaded              []corev1.Pod          // the consumer's view of them
	clients                map[string]corev1.Pod // consumer node → its client pod
	// trafficIn is the time from terraform apply to HTTP from every consumer node to every
	// offloaded pod.
	trafficIn time.Duration
}

// peerAcrossNodes is TestPeeringAcrossNodes for tc.
func peerAcrossNodes(t testing.TB, tc fabricCase) {
	h, consumer, provider, before := twoNodePair(t, tc)
	p := peerUpAcrossNodes(t, consumer, provider)
	checkAcrossNodes(t, tc, p)
	if tc.churn {
		fabricChurn(t, &peeredConsumer{consumer: consumer, local: p.local, clients: p.clients, target: p.offloaded[0]})
	}
	peerDownAcrossNodes(t, h, p, before)
}

// peerUpAcrossNodes applies examples/peering between consumer and provider, places an
// offloaded pod on each provider node and a client pod on each consumer node, and waits until
// every client reaches every offloaded pod over HTTP.
func peerUpAcrossNodes(t testing.TB, consumer, provider *testenv.Cluster) *acrossNodes {
	t.Helper()
	ctx := t.Context()
	tf := newTerraformRun(t)
	vars := []string{"consumer_kubeconfig=" + consumer.KubeconfigPath, "provider_kubeconfig=" + provider.KubeconfigPath,
		"gateway_service_type=NodePort", "cpu=2", "memory=2Gi", "pods=40"}
	start := time.Now()
	_, applied := tf.mustRun(t, "peering", "apply", vars...)
	t.Logf("terraform apply examples/peering: %s to a connected tunnel and a Ready virtual node", applied.Round(100*time.Millisecond))
	consumerGW, providerGW := gatewayNode(ctx, t, consumer, "gateway-client"), gatewayNode(ctx, t, provider, "gateway-server")
	t.Logf("gateways: the consumer's on %s, the provider's on %s", consumerGW.Name, providerGW.Name)
	for _, c := range []*testenv.Cluster{consumer, provider} {
		expectInternalNodes(ctx, t, c)
	}

	// An offloaded pod on each provider node: the other node cordoned while each is placed.
	ns := offloadNamespace(ctx, t, consumer, "demo")
	labels := map[string]string{"app": "hello"}
	remote := map[string]corev1.Pod{} // provider node → its offloaded pod, as the provider sees it
	var offloaded []corev1.Pod        // the consumer's view of them
	for i, n := range provider.RealNodes {
		other := provider.RealNodes[1-i]
		setUnschedulable(ctx, t, provider, other.Name, true)
		name := "hello-" + n.Name
		if err := consumer.Client.Create(ctx, httpDeployment(ns, name, map[string]string{"app": "hello", "on": n.Name}, 1, nil)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "an offloaded pod of "+name+" running on provider node "+n.Name, 3*time.Minute, func(ctx context.Context) bool {
			for _, p := range runningContainers(ctx, provider, n.Name) {
				if strings.HasPrefix(p.Name, name) {
					remote[n.Name] = p
					return true
				}
			}
			return false
		})
		setUnschedulable(ctx, t, provider, other.Name, false)
	}
	testenv.Eventually(t, "the consumer's view: 2 offloaded pods Running on the virtual node", time.Minute, func(ctx context.Context) bool {
		offloaded = podsOn(ctx, consumer, ns, labels, "provider")
		return len(offloaded) == 2
	})
	expectLogsAndExec(t, consumer, ns, offloaded[0].Name)

	// A client pod on each consumer node.
	local := createNamespace(ctx, t, consumer, "client")
	clients := map[string]corev1.Pod{}
	for _, n := range consumer.RealNodes {
		l := map[string]string{"app": "local", "on": n.Name}
		if err := consumer.Client.Create(ctx, httpDeployment(local, "local-"+n.Name, l, 1, map[string]string{"kubernetes.io/hostname": n.Name})); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "a client pod Running on consumer node "+n.Name, 2*time.Minute, func(ctx context.Context) bool {
			pods := podsOn(ctx, consumer, local, l, n.Name)
			if len(pods) == 1 {
				clients[n.Name] = pods[0]
			}
			return len(pods) == 1
		})
	}
	// From each consumer node, to the offloaded pod on each provider node.
	for _, n := range consumer.RealNodes {
		from := clients[n.Name]
		for _, target := range offloaded {
			url := "http://" + net.JoinHostPort(target.Status.PodIP, "8080") + "/"
			expectGet(t, consumer, local, from.Name, url, target.Name, "consumer node "+n.Name+" to offloaded pod "+target.Name)
		}
	}
	trafficIn := time.Since(start)
	t.Logf("every consumer node reached every offloaded pod %s after the apply began", trafficIn.Round(100*time.Millisecond))
	return &acrossNodes{consumer: consumer, provider: provider, tf: tf, vars: vars, consumerGW: consumerGW, providerGW: providerGW,
		ns: ns, local: local, remote: remote, offloaded: offloaded, clients: clients, trafficIn: trafficIn}
}

// checkAcrossNodes checks p beyond the clients' HTTP: where the offloaded pods see requests
// from, a consumer Service, the way back, and logs the latency and memory.
func checkAcrossNodes(t testing.TB, tc fabricCase, p *acrossNodes) {
	t.Helper()
	ctx := t.Context()
	consumer, provider, consumerGW, providerGW := p.consumer, p.provider, p.consumerGW, p.providerGW
	ns, local, remote, offloaded, clients := p.ns, p.local, p.remote, p.offloaded, p.clients
	for _, o := range offloaded {
		if i := slices.IndexFunc(slices.Collect(maps.Values(remote)), func(r corev1.Pod) bool { return r.Name == o.Name && r.Status.PodIP == o.Status.PodIP }); tc.declared != "" && i >= 0 {
			t.Errorf("consumer's view of %s: IP %s is the provider's own, want it under the remapped CIDR", o.Name, o.Status.PodIP)
		}
	}
	// The last request to each offloaded pod came from the client on the consumer's last node:
	// each saw it from that pod's own address (remapped: under the provider's CIDR for the
	// consumer's pods), not from a node's or a gateway's.
	last := clients[consumer.RealNodes[len(consumer.RealNodes)-1].Name].Status.PodIP
	if tc.declared != "" {
		last = remappedAddress(ctx, t, provider, last)
	}
	for pn, r := range remote {
		if seen := requestSource(t, provider, []corev1.Pod{r}, r.Name); seen != last {
			t.Errorf("offloaded pod on provider node %s saw the request from %s, want the consumer pod's %s", pn, seen, last)
		}
	}
	// A consumer Service backed by the offloaded pods, from the node without the gateway.
	otherConsumer := otherNode(consumer, consumerGW)
	expectService(ctx, t, consumer, ns, map[string]string{"app": "hello"}, local, clients[otherConsumer.Name].Name, offloaded)

	// Back: from the offloaded pod on the provider's node without the gateway to the consumer
	// pod on the consumer's node without the gateway, at the address the provider sees it under.
	back := remote[otherNode(provider, providerGW).Name]
	target := clients[otherConsumer.Name]
	addr := target.Status.PodIP
	if tc.declared != "" {
		addr = remappedAddress(ctx, t, provider, addr)
	}
	expectGet(t, provider, back.Namespace, back.Name, "http://"+net.JoinHostPort(addr, "8080")+"/", target.Name,
		"offloaded pod "+back.Name+" to consumer pod "+target.Name)

	// Latency through the tunnel from the gateway's node and from the other one.
	for _, n := range []*testenv.RealNode{consumerGW, otherConsumer} {
		url := "http://" + net.JoinHostPort(offloaded[0].Status.PodIP, "8080") + "/"
		t.Logf("HTTP latency from consumer node %s to %s, 200 requests on new connections: %s", n.Name, offloaded[0].Name,
			benchHTTP(t, consumer, local, clients[n.Name].Name, url))
	}
	logPodRSS(t, tc.virtualKubelet)
	logProcessRSS(t, "liqo-fabric")
}

// peerDownAcrossNodes deletes p's pods, destroys the peering and uninstalls the chart, checking
// that nothing is left on any node.
func peerDownAcrossNodes(t testing.TB, h *chart.Helper, p *acrossNodes, before map[*testenv.RealNode][]string) {
	t.Helper()
	ctx := t.Context()
	consumer, provider := p.consumer, p.provider
	for _, n := range []string{p.ns, p.local} {
		if err := consumer.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the offloaded containers gone from the provider", 2*time.Minute, func(ctx context.Context) bool {
		return len(runningContainers(ctx, provider, provider.RealNodes[0].Name))+len(runningContainers(ctx, provider, provider.RealNodes[1].Name)) == 0
	})
	p.tf.mustRun(t, "peering", "destroy", p.vars...)
	uninstallLeavingNothingOnNodes(t, h, []*testenv.Cluster{consumer, provider}, before)
}

// expectInternalNodes waits for an InternalNode per real node of c, with the node's address in
// its status (the fabric agent's, once there is a gateway: local on the gateway's node, remote
// on the others).
func expectInternalNodes(ctx context.Context, t testing.TB, c *testenv.Cluster) {
	t.Helper()
	testenv.Eventually(t, c.Name+": an InternalNode per real node, with its address in status", 2*time.Minute, func(ctx context.Context) bool {
		for _, n := range c.RealNodes {
			in := &netv1beta1.InternalNode{}
			if c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, in) != nil {
				return false
			}
			if ip := in.Status.NodeIP; ptr.Deref(ip.Local, "") != netv1beta1.IP(n.IP) && ptr.Deref(ip.Remote, "") != netv1beta1.IP(n.IP) {
				return false
			}
		}
		return true
	})
}

// gatewayNode is the real node of c that runs its gateway pod of component.
func gatewayNode(ctx context.Context, t testing.TB, c *testenv.Cluster, component string) *testenv.RealNode {
	t.Helper()
	pods := gatewayPods(ctx, t, c, component)
	if len(pods) != 1 {
		t.Fatalf("%s: %d %s pods running on its real nodes, want 1:\n%s", c.Name, len(pods), component, describePods(ctx, c, ""))
	}
	i := slices.IndexFunc(c.RealNodes, func(n *testenv.RealNode) bool { return n.Name == pods[0].Spec.NodeName })
	return c.RealNodes[i]
}

// otherNode is c's real node that is not n (the clusters here have two).
func otherNode(c *testenv.Cluster, n *testenv.RealNode) *testenv.RealNode {
	if c.RealNodes[0] == n {
		return c.RealNodes[1]
	}
	return c.RealNodes[0]
}

// setUnschedulable cordons or uncordons node of c.
func setUnschedulable(ctx context.Context, t testing.TB, c *testenv.Cluster, node string, unschedulable bool) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Unschedulable = unschedulable
	if err := c.Client.Patch(ctx, n, patch); err != nil {
		t.Fatalf("cordon %s of %s (%t): %v", node, c.Name, unschedulable, err)
	}
}

// expectGet waits until pod of c gets want (a pod's hostname) from url.
func expectGet(t testing.TB, c *testenv.Cluster, ns, pod, url, want, what string) {
	t.Helper()
	getWithin(t, time.Minute, c, ns, pod, url, want, what)
}

// remappedAddress is addr (a consumer pod's) as provider sees it: the same host part in the
// pod CIDR the provider's Configuration remaps the consumer's to.
func remappedAddress(ctx context.Context, t testing.TB, provider *testenv.Cluster, addr string) string {
	t.Helper()
	list := &netv1beta1.ConfigurationList{}
	if err := provider.Client.List(ctx, list); err != nil || len(list.Items) != 1 {
		t.Fatalf("the provider's Configuration: %d, %v", len(list.Items), err)
	}
	remote := list.Items[0].Status.Remote
	if remote == nil || len(remote.CIDR.Pod) == 0 {
		t.Fatalf("the provider's Configuration has no remapped pod CIDR: %+v", list.Items[0].Status)
	}
	_, cidr, err := net.ParseCIDR(string(remote.CIDR.Pod[0]))
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(addr).To4()
	ones, _ := cidr.Mask.Size()
	mask := net.CIDRMask(ones, 32)
	out := make(net.IP, 4)
	for i := range out {
		out[i] = cidr.IP[i]&mask[i] | ip[i]&^mask[i]
	}
	return out.String()
}

// uninstallLeavingNothingOnNodes runs `helm uninstall` in each cluster and checks that nothing
// of ours is left in the cluster or on any of its nodes.
func uninstallLeavingNothingOnNodes(t testing.TB, h *chart.Helper, clusters []*testenv.Cluster, before map[*testenv.RealNode][]string) {
	t.Helper()
	ctx := t.Context()
	for _, c := range clusters {
		if out, err := h.Run(ctx, helmArgs(c, "uninstall", chart.Release, "--wait", "--timeout", "3m")...); err != nil {
			t.Fatalf("helm uninstall from %s: %v\n%s\n%s", c.Name, err, out, describePods(ctx, c, releaseNamespace))
		}
		if left := leftovers(ctx, t, c); len(left) > 0 {
			t.Errorf("%s: left after destroy and helm uninstall: %v", c.Name, left)
		}
		for _, n := range c.RealNodes {
			testenv.EventuallyOK(t, c.Name+"'s node "+n.Name+": its network as before the chart", time.Minute, func() error {
				if added, removed := networkChange(before[n], nodeNetwork(t, n)); len(added)+len(removed) > 0 {
					return fmt.Errorf("added %v, removed %v", added, removed)
				}
				return nil
			})
		}
	}
}

// networkChange is what a node's network (nodeNetwork) gained and lost between was and is, but
// for the CNI's own links, which flannel makes with the node's first pod.
func networkChange(was, is []string) (added, removed []string) {
	cni := func(s string) bool { return s == "link cni0" || s == "link flannel.1" }
	for _, s := range is {
		if !slices.Contains(was, s) && !cni(s) {
			added = append(added, s)
		}
	}
	for _, s := range was {
		if !slices.Contains(is, s) && !cni(s) {
			removed = append(removed, s)
		}
	}
	return added, removed
}

// churnTimeout bounds each churn step: generous, for a loaded machine; the team's goal is 10 s,
// which the test logs rather than asserts.
const churnTimeout = 90 * time.Second

// peeredConsumer is what the churn steps act on: the consumer of a working peering, its client
// pods (by node, in namespace local) and the offloaded pod they reach.
type peeredConsumer struct {
	consumer *testenv.Cluster
	local    string
	clients  map[string]corev1.Pod
	target   corev1.Pod
}

// url is the offloaded pod's HTTP address.
func (p *peeredConsumer) url() string {
	return "http://" + net.JoinHostPort(p.target.Status.PodIP, "8080") + "/"
}

// fabricChurn adds a real node to the consumer, then removes it, then moves the consumer's
// gateway to its other node, and logs how long the fabric took to follow each.
func fabricChurn(t testing.TB, p *peeredConsumer) {
	start := time.Now()
	added := churnAddNode(t, p)
	churnRemoveNode(t, p, added)
	churnMoveGateway(t, p)
	t.Logf("the churn steps took %s", time.Since(start).Round(100*time.Millisecond))
}

// churnAddNode starts a third real node in the consumer and waits for its InternalNode, its
// fabric agent and HTTP from a pod pinned on it to the offloaded pod.
func churnAddNode(t testing.TB, p *peeredConsumer) *testenv.RealNode {
	t.Helper()
	ctx, c := t.Context(), p.consumer
	name := fmt.Sprintf("%s-node%d", c.Name, len(c.RealNodes)+1) // AddRealNode's next name
	l := map[string]string{"app": "local", "on": name}
	// Created first: its pod is scheduled as soon as the node is.
	if err := c.Client.Create(ctx, httpDeployment(p.local, "local-"+name, l, 1, map[string]string{"kubernetes.io/hostname": name})); err != nil {
		t.Fatal(err)
	}
	registered := make(chan time.Time, 1)
	go func() {
		_ = pollUntil(ctx, func(ctx context.Context) bool {
			return c.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{}) == nil
		})
		registered <- time.Now()
	}()
	n, err := c.AddRealNode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != name {
		t.Fatalf("added node %s, want %s", n.Name, name)
	}
	t0 := <-registered
	t.Logf("node added: %s registered, Ready %s later (containerd to Ready: %s)", n.Name, time.Since(t0).Round(100*time.Millisecond), n.ReadyIn.Round(100*time.Millisecond))
	testenv.Eventually(t, "the added node's InternalNode", churnTimeout, func(ctx context.Context) bool {
		return c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, &netv1beta1.InternalNode{}) == nil
	})
	inode := time.Since(t0)
	testenv.Eventually(t, "a fabric agent running on the added node", churnTimeout, func(ctx context.Context) bool {
		return len(fabricAgents(ctx, c, n.Name)) == 1
	})
	agent := time.Since(t0)
	var from corev1.Pod
	testenv.Eventually(t, "a client pod Running on the added node", churnTimeout, func(ctx context.Context) bool {
		pods := podsOn(ctx, c, p.local, l, n.Name)
		if len(pods) == 1 {
			from = pods[0]
		}
		return len(pods) == 1
	})
	podUp := time.Since(t0)
	expectGetWithin(t, c, p.local, from.Name, p.url(), p.target.Name, "added node "+n.Name+" to offloaded pod "+p.target.Name)
	t.Logf("node added: from its Node's registration, InternalNode after %s, fabric agent running after %s, client pod Running after %s, HTTP to the offloaded pod after %s",
		inode.Round(100*time.Millisecond), agent.Round(100*time.Millisecond), podUp.Round(100*time.Millisecond), time.Since(t0).Round(100*time.Millisecond))
	return n
}

// churnRemoveNode ends node n as a failed machine (its processes killed, its Node deleted as an
// admin or an autoscaler would) and waits until its InternalNode and GeneveTunnels are gone and
// the gateway's node has no link to it; nothing of n is left on the host.
func churnRemoveNode(t testing.TB, p *peeredConsumer, n *testenv.RealNode) {
	t.Helper()
	ctx, c := t.Context(), p.consumer
	in := &netv1beta1.InternalNode{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, in); err != nil {
		t.Fatal(err)
	}
	link := in.Spec.Interface.Gateway.Name
	gw := gatewayNode(ctx, t, c, "gateway-client")
	if !slices.Contains(nodeNetwork(t, gw), "link "+link) {
		t.Fatalf("the gateway's node %s has no link %s to node %s before its removal: %v", gw.Name, link, n.Name, nodeNetwork(t, gw))
	}
	if err := c.RemoveRealNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	if left := n.Leftovers(ctx); len(left) > 0 {
		t.Errorf("removed node %s left on the host: %v", n.Name, left)
	}
	t0 := time.Now()
	if err := c.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the removed node's InternalNode gone", churnTimeout, func(ctx context.Context) bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKey{Name: n.Name}, &netv1beta1.InternalNode{}))
	})
	inode := time.Since(t0)
	testenv.Eventually(t, "the removed node's GeneveTunnels gone", churnTimeout, func(ctx context.Context) bool {
		list := &netv1beta1.GeneveTunnelList{}
		return c.Client.List(ctx, list, client.MatchingLabels{consts.InternalNodeNameLabel: n.Name}) == nil && len(list.Items) == 0
	})
	tunnels := time.Since(t0)
	testenv.Eventually(t, "no link "+link+" to the removed node on the gateway's node "+gw.Name, churnTimeout, func(context.Context) bool {
		return !slices.Contains(nodeNetwork(t, gw), "link "+link)
	})
	t.Logf("node removed: from its Node's deletion, InternalNode gone after %s, GeneveTunnels after %s, the gateway's link to it after %s",
		inode.Round(100*time.Millisecond), tunnels.Round(100*time.Millisecond), time.Since(t0).Round(100*time.Millisecond))
	if err := c.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: p.local, Name: "local-" + n.Name}}); err != nil {
		t.Fatal(err)
	}
}

// churnMoveGateway cordons the node of the consumer's gateway and deletes its pod, and waits
// until the gateway runs on the other node and the client on each node reaches the offloaded
// pod again.
func churnMoveGateway(t testing.TB, p *peeredConsumer) {
	t.Helper()
	ctx, c := t.Context(), p.consumer
	old := gatewayNode(ctx, t, c, "gateway-client")
	setUnschedulable(ctx, t, c, old.Name, true)
	defer setUnschedulable(context.WithoutCancel(ctx), t, c, old.Name, false)
	t0 := time.Now()
	for _, pod := range gatewayPods(ctx, t, c, "gateway-client") {
		if err := c.Client.Delete(ctx, &pod); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the consumer's gateway running on the other node", churnTimeout, func(ctx context.Context) bool {
		pods := gatewayPods(ctx, t, c, "gateway-client")
		return len(pods) == 1 && pods[0].Spec.NodeName != old.Name
	})
	moved := time.Since(t0)
	var reached []string
	for _, n := range c.RealNodes {
		expectGetWithin(t, c, p.local, p.clients[n.Name].Name, p.url(), p.target.Name, "consumer node "+n.Name+" to offloaded pod "+p.target.Name+" after the gateway moved")
		reached = append(reached, fmt.Sprintf("from %s after %s", n.Name, time.Since(t0).Round(100*time.Millisecond)))
	}
	t.Logf("gateway moved off %s: from its pod's deletion, running on the other node after %s, HTTP to the offloaded pod %s",
		old.Name, moved.Round(100*time.Millisecond), strings.Join(reached, ", "))
}

// expectGetWithin is expectGet with churnTimeout.
func expectGetWithin(t testing.TB, c *testenv.Cluster, ns, pod, url, want, what string) {
	t.Helper()
	getWithin(t, churnTimeout, c, ns, pod, url, want, what)
}

// getWithin waits up to timeout until pod of c gets want (a pod's hostname) from url.
func getWithin(t testing.TB, timeout time.Duration, c *testenv.Cluster, ns, pod, url, want, what string) {
	t.Helper()
	var body string
	testenv.Eventually(t, what+": GET "+url, timeout, func(context.Context) bool {
		var err error
		body, err = kubectl(c, "-n", ns, "exec", pod, "--", "/test-http", "get", url)
		return err == nil
	})
	if strings.TrimSpace(body) != want {
		t.Errorf("%s: GET %s answered %q, want %s", what, url, body, want)
	}
}

// fabricAgents are the running fabric agent pods on node of c.
func fabricAgents(ctx context.Context, c *testenv.Cluster, node string) []corev1.Pod {
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.InNamespace(releaseNamespace), client.MatchingLabels{"app.kubernetes.io/name": "fabric"}); err != nil {
		return nil
	}
	return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
		return p.Spec.NodeName != node || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil
	})
}

// pollUntil polls cond every 100 ms until it holds or ctx ends.
func pollUntil(ctx context.Context, cond func(context.Context) bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond(ctx) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
