package sandbox

// The sandbox's network, when the supervisor runs as root: no kubelet runs the gateway
// Deployments the gateway controllers render, so the supervisor plays the part of the nodes and
// of a cloud load balancer.
//
//   - A bridge in the root network namespace (lqsb-br0, 192.168.241.1/24) stands for the
//     network between the clusters. Each cluster has a "gateway host" network namespace
//     (lqsb-<cluster>) plugged into it at 192.168.241.(10+i), and a "pod" network namespace
//     (lqsb-<cluster>-pod) behind the gateway host, at the cluster's pod CIDR's .10 address,
//     with its default route through the gateway host: a stand-in for a pod, to show pod-to-pod
//     traffic through the tunnel.
//   - A LoadBalancer controller gives every LoadBalancer Service of a GatewayServer the gateway
//     host's address as its ingress, so the GatewayServer reports an endpoint the remote
//     gateway reaches. LoadBalancer is the sandbox's service type: a NodePort endpoint would be
//     the KWOK nodes' addresses, which nothing answers.
//   - A gateway runner runs one liqo-gateway process (process mode) per GatewayServer and
//     GatewayClient inside the cluster's gateway host, restarts it when it exits and stops it
//     when its object goes.
//
// Without root (or without ip, iptables or /dev/net/tun, or without the gateway binary), the
// supervisor says once that networking is disabled, and peerings must use networking = false.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
)

// Names and addresses of the sandbox's network.
const (
	// NetPrefix starts the name of every network namespace, link and tunnel interface the
	// sandbox creates; `liqo-sandbox down` removes what is left with it.
	NetPrefix = "lqsb-"
	// BridgeName is the bridge linking the gateway hosts, in the root network namespace.
	BridgeName = NetPrefix + "br0"
	// bridgeAddr is the root namespace's address on the bridge.
	bridgeAddr = "192.168.241.1/24"
	// hostAddrBase + i is cluster i's gateway host address on the bridge.
	hostAddrBase = 10
	// tunnelIfPrefix starts the gateways' tunnel interface names (and their UAPI sockets).
	tunnelIfPrefix = "lqsb"
	// wireguardSocketDir holds the tunnels' UAPI sockets, shared by every network namespace.
	wireguardSocketDir = "/var/run/wireguard"
	// netnsDir holds the named network namespaces.
	netnsDir = "/var/run/netns"
	// networkingFile in the state folder says whether the gateways run ("enabled") or why not.
	networkingFile = "networking"
	// gatewayStopGrace is how long a gateway has to remove its interface, routes and rules.
	gatewayStopGrace = 10 * time.Second
	// restartMin and restartMax bound the delay before a gateway that exited is restarted.
	restartMin, restartMax = time.Second, 30 * time.Second
)

// HostNetns is the network namespace of the named cluster's gateway host.
func HostNetns(cluster string) string { return NetPrefix + cluster }

// PodNetns is the network namespace standing for a pod of the named cluster.
func PodNetns(cluster string) string { return NetPrefix + cluster + "-pod" }

// HostAddress is the named cluster's gateway host address on the bridge: the ingress of its
// gateway LoadBalancer Services. Empty for an unknown cluster.
func HostAddress(cluster string) string {
	for i, name := range ClusterNames {
		if name == cluster {
			return fmt.Sprintf("192.168.241.%d", hostAddrBase+i)
		}
	}
	return ""
}

// PodAddress is the address of the named cluster's stand-in pod: the .10 address of its pod
// CIDR. Empty for an unknown cluster.
func PodAddress(cluster string) string {
	addr, _, _, err := podAddrs(cluster)
	if err != nil {
		return ""
	}
	return addr
}

// podAddrs returns the stand-in pod's address and its gateway (the gateway host's address on
// the pod link), .10 and .1 of the cluster's pod CIDR, and the CIDR's prefix length: the
// gateway host reaches the whole pod CIDR on that link (the pods' addresses, podnet.go).
func podAddrs(cluster string) (pod, gw string, bits int, err error) {
	for _, o := range clusters(len(ClusterNames)) {
		if o.Name != cluster {
			continue
		}
		_, n, err := net.ParseCIDR(o.PodCIDR)
		if err != nil || n.IP.To4() == nil {
			return "", "", 0, fmt.Errorf("cluster %s: pod CIDR %q is not an IPv4 network", cluster, o.PodCIDR)
		}
		b := n.IP.To4()
		bits, _ = n.Mask.Size()
		return net.IPv4(b[0], b[1], b[2], b[3]+10).String(), net.IPv4(b[0], b[1], b[2], b[3]+1).String(), bits, nil
	}
	return "", "", 0, fmt.Errorf("unknown sandbox cluster %q", cluster)
}

// tunnelInterface names the tunnel of one gateway: unique across the sandbox's clusters (the
// UAPI socket path is shared by every network namespace) and at most 15 characters.
func tunnelInterface(k gatewayKey) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(k.cluster + "/" + k.namespace + "/" + k.name))
	return fmt.Sprintf("%s%c%08x", tunnelIfPrefix, k.mode[0], h.Sum32())
}

// tunnelCIDR gives each pair of sandbox clusters its own tunnel network, so that a cluster's
// gateway host can hold several tunnels (a hub peered with two providers): both ends of a
// tunnel compute the same one from the pair of names (the tenant namespace names the remote
// cluster). "" (the gateway's default) when the remote cluster is not a sandbox cluster.
func tunnelCIDR(k gatewayKey) string {
	local, remote := -1, -1
	for i, name := range ClusterNames {
		switch {
		case name == k.cluster:
			local = i
		case "liqo-tenant-"+name == k.namespace:
			remote = i
		}
	}
	if local < 0 || remote < 0 {
		return ""
	}
	lo, hi := min(local, remote), max(local, remote)
	return fmt.Sprintf("169.254.%d.0/30", 20+lo*len(ClusterNames)+hi)
}

// networkUnsupported says why the gateways cannot run here, or "" when they can.
func (s *Sandbox) networkUnsupported() string {
	return networkUnsupported(os.Geteuid(), s.GatewayBin)
}

// networkUnsupported says why the gateways cannot run for a supervisor of that effective user
// ID with that gateway binary, or "" when they can.
func networkUnsupported(euid int, gatewayBin string) string {
	if euid != 0 {
		return "the supervisor is not root (the gateways need network namespaces, TUN devices and iptables rules)"
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return "/dev/net/tun is missing (the gateways' tunnels are TUN devices)"
	}
	for _, bin := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(bin); err != nil {
			return bin + " is not on PATH (install iproute2 and iptables)"
		}
	}
	if gatewayBin == "" {
		return "no gateway binary given (-gateway-bin)"
	}
	if _, err := os.Stat(gatewayBin); err != nil {
		return fmt.Sprintf("the gateway binary %s is missing (make sandbox builds it)", gatewayBin)
	}
	return ""
}

// network is the sandbox's running network: namespaces, bridge, LoadBalancer controller and
// gateway runner.
type network struct {
	out        io.Writer
	clusters   []string
	runner     *gatewayRunner
	podServers []*http.Server // the stand-in pods' HTTP servers (podnet.go)
	cancel     context.CancelFunc
}

// startNetwork sets up the network of the clusters in env and starts the LoadBalancer controller
// and the gateway runner. When the gateways cannot run it says so once, records why in the state
// folder and returns nil: the sandbox runs without networking.
func (s *Sandbox) startNetwork(ctx context.Context, env *testenv.Env) (*network, error) {
	record := func(msg string) error {
		if err := os.WriteFile(filepath.Join(s.StateDir, networkingFile), []byte(msg+"\n"), 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", networkingFile, err)
		}
		return nil
	}
	if why := s.networkUnsupported(); why != "" {
		fmt.Fprintf(s.Out, "networking disabled: %s; the gateways do not run, so peerings must set networking = false\n", why)
		return nil, record("disabled: " + why)
	}
	// What a killed supervisor left goes; a running sandbox's network stays, and this one runs
	// without networking (the network's names are fixed).
	if err := sweepNetwork(s.Out); err != nil {
		return nil, err
	}
	if _, err := net.InterfaceByName(BridgeName); err == nil {
		pid, _ := bridgeOwner()
		why := fmt.Sprintf("the network (%s*) is held by another running sandbox (supervisor pid %d)", NetPrefix, pid)
		fmt.Fprintf(s.Out, "networking disabled: %s; the gateways do not run, so peerings must set networking = false\n", why)
		return nil, record("disabled: " + why)
	}
	n := &network{out: s.Out}
	for _, c := range env.Clusters {
		n.clusters = append(n.clusters, c.Name)
	}
	start := time.Now()
	if err := n.setup(); err != nil {
		return nil, errors.Join(err, n.teardown())
	}
	fmt.Fprintf(s.Out, "network set up in %.1fs: bridge %s, gateway hosts and pods in network namespaces %s<cluster>[-pod]\n",
		time.Since(start).Seconds(), BridgeName, NetPrefix)

	logDir := filepath.Join(s.StateDir, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, errors.Join(fmt.Errorf("creating %s: %w", logDir, err), n.teardown())
	}
	rctx, cancel := context.WithCancel(ctx)
	n.cancel = cancel
	n.runner = &gatewayRunner{bin: s.GatewayBin, logDir: logDir, out: s.Out,
		apiNetns: fmt.Sprintf("/proc/%d/ns/net", os.Getpid()), procs: map[gatewayKey]*gatewayProc{}}
	for _, c := range env.Clusters {
		pods, err := newPodAddresses(c.Name)
		if err != nil {
			return nil, errors.Join(err, n.stop())
		}
		srv, err := pods.serve(s.Out)
		if err != nil {
			return nil, errors.Join(err, n.stop())
		}
		n.podServers = append(n.podServers, srv)
		if err := n.runner.watch(rctx, c, pods); err != nil {
			return nil, errors.Join(err, n.stop())
		}
	}
	return n, record("enabled")
}

// setup creates the bridge and, for each cluster, its gateway host and pod namespaces.
func (n *network) setup() error {
	cmds := [][]string{
		{"link", "add", BridgeName, "type", "bridge"},
		{"link", "set", BridgeName, "alias", fmt.Sprintf("liqo-sandbox pid=%d", os.Getpid())},
		{"addr", "add", bridgeAddr, "dev", BridgeName},
		{"link", "set", BridgeName, "up"},
	}
	for _, cluster := range n.clusters {
		i := clusterIndex(cluster)
		host, pod := HostNetns(cluster), PodNetns(cluster)
		podIP, podGW, bits, err := podAddrs(cluster)
		if err != nil {
			return err
		}
		uplink := fmt.Sprintf("%su%d", NetPrefix, i)
		cmds = append(cmds,
			[]string{"netns", "add", host},
			[]string{"netns", "add", pod},
			[]string{"-n", host, "link", "set", "lo", "up"},
			[]string{"-n", pod, "link", "set", "lo", "up"},
			// The gateway host's leg on the bridge.
			[]string{"link", "add", uplink, "type", "veth", "peer", "name", "ul0", "netns", host},
			[]string{"link", "set", uplink, "master", BridgeName, "up"},
			[]string{"-n", host, "addr", "add", HostAddress(cluster) + "/24", "dev", "ul0"},
			[]string{"-n", host, "link", "set", "ul0", "up"},
			// The pod behind the gateway host.
			[]string{"link", "add", "pod0", "netns", host, "type", "veth", "peer", "name", "eth0", "netns", pod},
			[]string{"-n", host, "addr", "add", podGW + "/" + strconv.Itoa(bits), "dev", "pod0"},
			[]string{"-n", host, "link", "set", "pod0", "up"},
			[]string{"-n", pod, "addr", "add", podIP + "/24", "dev", "eth0"},
			[]string{"-n", pod, "link", "set", "eth0", "up"},
			[]string{"-n", pod, "route", "add", "default", "via", podGW},
		)
	}
	for _, args := range cmds {
		if err := ipCmd(args...); err != nil {
			return err
		}
	}
	return nil
}

// clusterIndex is the cluster's position in ClusterNames.
func clusterIndex(cluster string) int {
	for i, name := range ClusterNames {
		if name == cluster {
			return i
		}
	}
	return len(ClusterNames)
}

// ipCmd runs `ip args...`.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// stop ends the gateways (they remove their interfaces, routes and rules), then the namespaces
// and the bridge. Safe on a nil network (networking disabled).
func (n *network) stop() error {
	if n == nil {
		return nil
	}
	var errs []error
	if n.cancel != nil {
		n.cancel()
	}
	if n.runner != nil {
		fmt.Fprintln(n.out, "stopping gateways")
		errs = append(errs, n.runner.stopAll())
	}
	for _, srv := range n.podServers {
		errs = append(errs, srv.Close())
	}
	fmt.Fprintln(n.out, "removing the network namespaces and the bridge")
	errs = append(errs, n.teardown())
	return errors.Join(errs...)
}

// teardown removes the namespaces and the bridge of this network (what exists of them), and
// the UAPI sockets of gateways that could not remove theirs.
func (n *network) teardown() error {
	var names []string
	for _, c := range n.clusters {
		names = append(names, HostNetns(c), PodNetns(c))
	}
	return removeNetwork(names, []string{BridgeName})
}

// removeNetwork ends the processes left in the named network namespaces (gateways whose
// supervisor died), deletes the namespaces (and so the links in them and their veth peers),
// then the links, then the tunnels' UAPI sockets left in wireguardSocketDir.
func removeNetwork(netns, links []string) error {
	var errs []error
	for _, ns := range netns {
		if _, err := os.Stat(filepath.Join(netnsDir, ns)); err != nil {
			continue
		}
		killNetnsProcesses(ns)
		if err := ipCmd("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	for _, l := range links {
		if _, err := net.InterfaceByName(l); err != nil {
			continue
		}
		if err := ipCmd("link", "del", l); err != nil {
			errs = append(errs, err)
		}
	}
	socks, _ := filepath.Glob(filepath.Join(wireguardSocketDir, tunnelIfPrefix+"*.sock"))
	for _, s := range socks {
		if err := os.Remove(s); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the stale tunnel socket %s: %w", s, err))
		}
	}
	return errors.Join(errs...)
}

// killNetnsProcesses kills the processes inside a sandbox network namespace: only the
// sandbox's gateways run there.
func killNetnsProcesses(ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// sweepNetwork removes what a killed supervisor left: the network namespaces and root-namespace
// links named with NetPrefix, and stale tunnel sockets. It leaves them when the bridge names a
// supervisor that is still alive (another sandbox). Without root it only reports leftovers.
func sweepNetwork(out io.Writer) error {
	var netns, links []string
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), NetPrefix) {
			netns = append(netns, e.Name())
		}
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, NetPrefix) {
			links = append(links, i.Name)
		}
	}
	socks, _ := filepath.Glob(filepath.Join(wireguardSocketDir, tunnelIfPrefix+"*.sock"))
	if len(netns)+len(links)+len(socks) == 0 {
		return nil
	}
	if pid, ok := bridgeOwner(); ok {
		fmt.Fprintf(out, "network %s* left alone: it belongs to the running sandbox supervisor pid %d\n", NetPrefix, pid)
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("a sandbox network is left (namespaces %v, links %v): run `liqo-sandbox down` as root to remove it", netns, links)
	}
	fmt.Fprintf(out, "removing the network a stopped sandbox left: namespaces %v, links %v\n", netns, links)
	return removeNetwork(netns, links)
}

// bridgeOwner returns the supervisor named in the bridge's alias when it is alive.
func bridgeOwner() (int, bool) {
	alias, err := os.ReadFile(filepath.Join("/sys/class/net", BridgeName, "ifalias"))
	if err != nil {
		return 0, false
	}
	_, p, ok := strings.Cut(strings.TrimSpace(string(alias)), "pid=")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return pid, bytes.Contains(cmdline, []byte("serve"))
}

// printNetworkUsage tells how the sandbox's networking is: the stand-in pods and their
// addresses, or why networking is disabled.
func (s *Sandbox) printNetworkUsage() {
	data, err := os.ReadFile(filepath.Join(s.StateDir, networkingFile))
	if err != nil {
		return
	}
	state := strings.TrimSpace(string(data))
	if nodes, _ := os.ReadFile(filepath.Join(s.StateDir, nodesFile)); strings.TrimSpace(string(nodes)) == NodesReal {
		fmt.Fprintf(s.Out, "\nReal nodes: the chart runs in namespace %s of each cluster; the gateways run as pods on the nodes,\n"+
			"so gateway servers use service type NodePort (examples/peering: -var gateway_service_type=NodePort).\n", chartNamespace)
		return
	}
	if state != "enabled" {
		fmt.Fprintf(s.Out, "\nNetworking %s.\nPeer with networking = false.\n", state)
		return
	}
	fmt.Fprintf(s.Out, "\nNetworking enabled: gateways run in network namespaces %s<cluster>; gateway servers must use service type LoadBalancer.\n", NetPrefix)
	fmt.Fprintf(s.Out, "A stand-in pod per cluster, to try the tunnel once peered:\n")
	for _, name := range s.names() {
		fmt.Fprintf(s.Out, "  %-10s ip netns exec %s <command>   (address %s)\n", name, PodNetns(name), PodAddress(name))
	}
}

// gatewayKey identifies one gateway: a GatewayServer or GatewayClient in a cluster.
type gatewayKey struct {
	cluster, mode, namespace, name string
}

func (k gatewayKey) String() string {
	return fmt.Sprintf("%s %s/%s on %s", k.mode, k.namespace, k.name, k.cluster)
}

// gatewayProc is one liqo-gateway process.
type gatewayProc struct {
	key      gatewayKey
	cmd      *exec.Cmd
	done     chan struct{}
	started  time.Time
	stopping bool // guarded by gatewayRunner.mu
}

// gatewayRunner runs the gateways of every cluster.
type gatewayRunner struct {
	bin, logDir, apiNetns string
	out                   io.Writer

	mu       sync.Mutex
	procs    map[gatewayKey]*gatewayProc
	restarts map[gatewayKey]int
	closed   bool // stopAll ran: nothing starts any more
	wg       sync.WaitGroup
}

// clusterWatch follows one cluster's gateway objects and LoadBalancer Services.
type clusterWatch struct {
	r          *gatewayRunner
	name       string
	kubeconfig string
	reader     client.Reader
	writer     client.Client
	trigger    chan struct{}
	clashes    map[gatewayKey]bool // servers reported as unable to run (port in use); loop only
	pods       *podAddresses       // the cluster's pod addresses (podnet.go)
	nodePorts  *[]string           // the node-port rules written in the gateway host, nil before the first (nodeports.go)
}

// poke asks for a sync of the cluster.
func (w *clusterWatch) poke() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// watch starts following cluster c: an informer cache on GatewayServers, GatewayClients,
// Services and Pods, each change triggering a sync (pods keep their addresses in pods).
func (r *gatewayRunner) watch(ctx context.Context, c *testenv.Cluster, pods *podAddresses) error {
	scheme, err := api.NewScheme()
	if err != nil {
		return fmt.Errorf("building scheme: %w", err)
	}
	ca, err := cache.New(c.Config, cache.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating the cache of cluster %s: %w", c.Name, err)
	}
	writer, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating a client of cluster %s: %w", c.Name, err)
	}
	w := &clusterWatch{r: r, name: c.Name, kubeconfig: c.KubeconfigPath, reader: ca, writer: writer, trigger: make(chan struct{}, 1),
		clashes: map[gatewayKey]bool{}, pods: pods}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.poke() },
		UpdateFunc: func(any, any) { w.poke() },
		DeleteFunc: func(any) { w.poke() },
	}
	for _, obj := range []client.Object{&netv1beta1.GatewayServer{}, &netv1beta1.GatewayClient{}, &corev1.Service{}, &corev1.Pod{}} {
		inf, err := ca.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watching %T in cluster %s: %w", obj, c.Name, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("handling events of %T in cluster %s: %w", obj, c.Name, err)
		}
	}
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		if err := ca.Start(ctx); err != nil {
			fmt.Fprintf(r.out, "cache of cluster %s: %v\n", c.Name, err)
		}
	}()
	go func() {
		defer r.wg.Done()
		if !ca.WaitForCacheSync(ctx) {
			return
		}
		w.loop(ctx)
	}()
	return nil
}

// loop syncs the cluster on every change until ctx ends.
func (w *clusterWatch) loop(ctx context.Context) {
	w.poke()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.trigger:
			if err := w.sync(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(w.r.out, "cluster %s: %v\n", w.name, err)
				// Retry later: the cache brings no event for what failed on the API side.
				time.AfterFunc(2*time.Second, w.poke)
			}
		}
	}
}

// sync gives LoadBalancer gateway Services their ingress, NodePort ones their node ports on the
// gateway host, the running pods their addresses, and runs one gateway per GatewayServer and
// GatewayClient.
func (w *clusterWatch) sync(ctx context.Context) error {
	errLB := errors.Join(w.syncLoadBalancers(ctx), w.syncNodePorts(ctx), w.pods.sync(ctx, w.reader))
	want := map[gatewayKey]bool{}
	servers := &netv1beta1.GatewayServerList{}
	if err := w.reader.List(ctx, servers); err != nil {
		return errors.Join(errLB, fmt.Errorf("listing GatewayServers: %w", err))
	}
	// A cluster's servers share its gateway host: one server per UDP port, the oldest first.
	slices.SortFunc(servers.Items, func(a, b netv1beta1.GatewayServer) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	ports := map[int32]string{}
	for i := range servers.Items {
		g := &servers.Items[i]
		if !g.DeletionTimestamp.IsZero() {
			continue
		}
		k := gatewayKey{w.name, "server", g.Namespace, g.Name}
		port := serverPort(g)
		if other, taken := ports[port]; taken {
			w.portClash(ctx, g, port, other)
			continue
		}
		ports[port] = g.Namespace + "/" + g.Name
		want[k] = true
		delete(w.clashes, k)
	}
	clients := &netv1beta1.GatewayClientList{}
	if err := w.reader.List(ctx, clients); err != nil {
		return errors.Join(errLB, fmt.Errorf("listing GatewayClients: %w", err))
	}
	for _, g := range clients.Items {
		if g.DeletionTimestamp.IsZero() {
			want[gatewayKey{w.name, "client", g.Namespace, g.Name}] = true
		}
	}
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	var errs []error
	for k, p := range w.r.procs {
		if k.cluster == w.name && !want[k] && !p.stopping {
			w.r.stopLocked(p)
		}
	}
	for k := range want {
		if _, ok := w.r.procs[k]; ok {
			continue // running, stopping or waiting to restart
		}
		if err := w.r.startLocked(ctx, w, k); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, errLB)...)
}

// serverPort is the UDP port a GatewayServer's gateway listens on.
func serverPort(g *netv1beta1.GatewayServer) int32 {
	if g.Spec.Endpoint.Port != 0 {
		return g.Spec.Endpoint.Port
	}
	if len(g.Spec.Endpoint.Ports) > 0 {
		return g.Spec.Endpoint.Ports[0]
	}
	return consts.DefaultGatewayPort
}

// portClash reports, once, that GatewayServer g cannot run because the server other in the same
// cluster listens on its port already: in the supervisor's log and as a Warning Event on g.
func (w *clusterWatch) portClash(ctx context.Context, g *netv1beta1.GatewayServer, port int32, other string) {
	k := gatewayKey{w.name, "server", g.Namespace, g.Name}
	if w.clashes[k] {
		return
	}
	msg := fmt.Sprintf("the sandbox runs all gateway servers of cluster %s in one network namespace, and GatewayServer %s uses UDP port %d already: "+
		"give this peering's gateway another port", w.name, other, port)
	fmt.Fprintf(w.r.out, "gateway %s not started: %s\n", k, msg)
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: g.Name + ".", Namespace: g.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: netv1beta1.GroupVersion.String(), Kind: "GatewayServer",
			Namespace: g.Namespace, Name: g.Name, UID: g.UID},
		Reason: "PortInUse", Message: msg, Type: corev1.EventTypeWarning, Count: 1,
		FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "liqo-sandbox"},
	}
	if err := w.writer.Create(ctx, ev); err != nil {
		fmt.Fprintf(w.r.out, "recording the port clash on GatewayServer %s/%s: %v\n", g.Namespace, g.Name, err)
	}
	w.clashes[k] = true
}

// syncLoadBalancers sets the ingress of every LoadBalancer Service a GatewayServer controls to
// the cluster's gateway host address, as a cloud's load balancer controller would.
func (w *clusterWatch) syncLoadBalancers(ctx context.Context) error {
	ip := HostAddress(w.name)
	svcs := &corev1.ServiceList{}
	if err := w.reader.List(ctx, svcs); err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	var errs []error
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || !ofGatewayServer(svc) {
			continue
		}
		if in := svc.Status.LoadBalancer.Ingress; len(in) == 1 && in[0].IP == ip {
			continue
		}
		svc = svc.DeepCopy()
		vip := corev1.LoadBalancerIPModeVIP
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip, IPMode: &vip}}
		if err := w.writer.Status().Update(ctx, svc); err != nil {
			errs = append(errs, fmt.Errorf("setting the load balancer ingress of Service %s/%s: %w", svc.Namespace, svc.Name, err))
			continue
		}
		fmt.Fprintf(w.r.out, "load balancer: Service %s/%s on %s reachable at %s\n", svc.Namespace, svc.Name, w.name, ip)
	}
	return errors.Join(errs...)
}

// gatewayLogPath is where a gateway's output goes.
func (r *gatewayRunner) gatewayLogPath(k gatewayKey) string {
	return filepath.Join(r.logDir, fmt.Sprintf("gateway-%s-%s-%s-%s.log", k.cluster, k.mode, k.namespace, k.name))
}

// startLocked starts the gateway k in its cluster's gateway host. r.mu is held.
func (r *gatewayRunner) startLocked(ctx context.Context, w *clusterWatch, k gatewayKey) error {
	if r.closed {
		return nil
	}
	logPath := r.gatewayLogPath(k)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the log of gateway %s: %w", k, err)
	}
	ifc := tunnelInterface(k)
	args := []string{"netns", "exec", HostNetns(k.cluster), r.bin,
		"-mode", k.mode, "-kubeconfig", w.kubeconfig, "-namespace", k.namespace, "-gateway", k.name,
		"-interface", ifc, "-api-netns", r.apiNetns}
	if cidr := tunnelCIDR(k); cidr != "" {
		args = append(args, "-tunnel-cidr", cidr)
	}
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// `ip netns exec` execs the gateway in place: the gateway dies with the supervisor.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("starting gateway %s: %w", k, err)
	}
	p := &gatewayProc{key: k, cmd: cmd, done: make(chan struct{}), started: time.Now()}
	r.procs[k] = p
	fmt.Fprintf(r.out, "gateway %s started (pid %d, interface %s, log %s)\n", k, cmd.Process.Pid, ifc, logPath)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := cmd.Wait()
		_ = logf.Close()
		close(p.done)
		r.exited(ctx, w, p, err)
	}()
	return nil
}

// exited handles the end of a gateway: stopped on purpose, it is forgotten; otherwise it is
// restarted after a growing delay (reset once a gateway ran for a minute).
func (r *gatewayRunner) exited(ctx context.Context, w *clusterWatch, p *gatewayProc, err error) {
	r.mu.Lock()
	if p.stopping {
		if r.procs[p.key] == p {
			delete(r.procs, p.key)
		}
		r.mu.Unlock()
		w.poke() // it may be wanted again (deleted and re-created)
		return
	}
	if r.restarts == nil {
		r.restarts = map[gatewayKey]int{}
	}
	if time.Since(p.started) > time.Minute {
		r.restarts[p.key] = 0
	}
	delay := restartMin << min(r.restarts[p.key], 5)
	delay = min(delay, restartMax)
	r.restarts[p.key]++
	r.mu.Unlock()
	fmt.Fprintf(r.out, "gateway %s exited (%v); restarting in %s (log %s)\n", p.key, err, delay, r.gatewayLogPath(p.key))
	select {
	case <-ctx.Done():
	case <-time.After(delay):
	}
	r.mu.Lock()
	if r.procs[p.key] == p {
		delete(r.procs, p.key)
	}
	r.mu.Unlock()
	w.poke()
}

// stopLocked asks a gateway to stop (SIGTERM: it removes its interface, routes and rules) and
// kills it after gatewayStopGrace. r.mu is held.
func (r *gatewayRunner) stopLocked(p *gatewayProc) {
	p.stopping = true
	select {
	case <-p.done:
		return // waiting to restart: nothing runs
	default:
	}
	fmt.Fprintf(r.out, "stopping gateway %s (pid %d)\n", p.key, p.cmd.Process.Pid)
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		select {
		case <-p.done:
		case <-time.After(gatewayStopGrace):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
}

// stopAll stops every gateway and waits until they and the runner's goroutines are done; the
// watches' context must be cancelled first.
func (r *gatewayRunner) stopAll() error {
	r.mu.Lock()
	r.closed = true
	procs := make([]*gatewayProc, 0, len(r.procs))
	for _, p := range r.procs {
		r.stopLocked(p)
		procs = append(procs, p)
	}
	r.mu.Unlock()
	var errs []error
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(gatewayStopGrace + 5*time.Second):
			errs = append(errs, fmt.Errorf("gateway %s (pid %d) did not stop", p.key, p.cmd.Process.Pid))
		}
	}
	r.wg.Wait()
	return errors.Join(errs...)
}
