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
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
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
)

// HostNetns is the network namespace of the named cluster's gateway host.
func HostNetns(cluster string) string { return NetPrefix + cluster }

// PodNetns is the network namespace standing for a pod of the named cluster.
func PodNetns(cluster string) string { return NetPrefix + cluster + "-pod" }

// HostAddress is the named cluster's gateway host address on the bridge: the ingress of its
// gateway LoadBalancer Services. Empty for an unknown cluster.
func HostAddress(cluster string) string {
	i := slices.Index(ClusterNames, cluster)
	if i < 0 {
		return ""
	}
	return fmt.Sprintf("192.168.241.%d", hostAddrBase+i)
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
	o, err := clusterOptions(cluster)
	if err != nil {
		return "", "", 0, err
	}
	if pod, gw, bits, err = standInAddrs(o.PodCIDR); err != nil {
		return "", "", 0, fmt.Errorf("cluster %s: %w", cluster, err)
	}
	return pod, gw, bits, nil
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
	extra      map[string][]string // further pod CIDRs of the clusters (podcidrs.go)
	runner     *gatewayRunner
	podServers []*http.Server // the stand-in pods' HTTP servers (podnet.go)
	cancel     context.CancelFunc

	stopProxies context.CancelFunc // ends the API-server proxies (apiproxy.go)
	proxies     sync.WaitGroup
}

// startNetwork sets up the network of the clusters in env and starts the LoadBalancer controller
// and the gateway runner. When the gateways cannot run it says so once, records why in the state
// folder and returns nil: the sandbox runs without networking.
func (s *Sandbox) startNetwork(ctx context.Context, env *testenv.Env) (*network, error) {
	if why := s.networkUnsupported(); why != "" {
		return nil, s.disableNetwork(why)
	}
	// What a killed supervisor left goes; a running sandbox's network stays, and this one runs
	// without networking (the network's names are fixed).
	if err := sweepNetwork(s.Out); err != nil {
		return nil, err
	}
	if _, err := net.InterfaceByName(BridgeName); err == nil {
		pid, _ := bridgeOwner()
		return nil, s.disableNetwork(fmt.Sprintf("the network (%s*) is held by another running sandbox (supervisor pid %d)", NetPrefix, pid))
	}
	n := &network{out: s.Out, extra: s.ExtraPodCIDRs}
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
	if err := n.startProxies(ctx, env); err != nil {
		return nil, errors.Join(err, n.stop())
	}
	n.runner = &gatewayRunner{bin: s.GatewayBin, logDir: logDir, out: s.Out,
		apiNetns: fmt.Sprintf("/proc/%d/ns/net", os.Getpid()), procs: map[gatewayKey]*gatewayProc{}}
	if err := n.run(ctx, env); err != nil {
		return nil, errors.Join(err, n.stop())
	}
	return n, s.recordNetworking("enabled")
}

// disableNetwork says once why the gateways do not run and records it in the state folder.
func (s *Sandbox) disableNetwork(why string) error {
	fmt.Fprintf(s.Out, "networking disabled: %s; the gateways do not run, so peerings must set networking = false\n", why)
	return s.recordNetworking("disabled: " + why)
}

// recordNetworking writes the networking state (enabled, or disabled and why) in the state
// folder, for printNetworkUsage.
func (s *Sandbox) recordNetworking(state string) error {
	if err := os.WriteFile(filepath.Join(s.StateDir, networkingFile), []byte(state+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", networkingFile, err)
	}
	return nil
}

// run starts, for each cluster of env, the stand-in pods' HTTP server and the watch that runs
// the cluster's gateways, LoadBalancer and node-port rules and pod addresses (clusterwatch.go).
func (n *network) run(ctx context.Context, env *testenv.Env) error {
	rctx, cancel := context.WithCancel(ctx)
	n.cancel = cancel
	for _, c := range env.Clusters {
		pods, err := newPodAddresses(c.Name)
		if err != nil {
			return err
		}
		srv, err := pods.serve(n.out)
		if err != nil {
			return err
		}
		n.podServers = append(n.podServers, srv)
		if err := n.runner.watch(rctx, c, pods); err != nil {
			return err
		}
	}
	return nil
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
		host, pod := HostNetns(cluster), PodNetns(cluster)
		podIP, podGW, bits, err := podAddrs(cluster)
		if err != nil {
			return err
		}
		uplink := fmt.Sprintf("%su%d", NetPrefix, slices.Index(ClusterNames, cluster))
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
		// The cluster's further pod CIDRs: the gateway host reaches each on the pod link, where
		// the stand-in pod holds its .10 address (its default route stays through the first).
		for _, cidr := range n.extra[cluster] {
			extraIP, extraGW, extraBits, err := standInAddrs(cidr)
			if err != nil {
				return fmt.Errorf("cluster %s: %w", cluster, err)
			}
			cmds = append(cmds,
				[]string{"-n", host, "addr", "add", extraGW + "/" + strconv.Itoa(extraBits), "dev", "pod0"},
				[]string{"-n", pod, "addr", "add", extraIP + "/32", "dev", "eth0"},
			)
		}
	}
	for _, args := range cmds {
		if err := ipCmd(args...); err != nil {
			return err
		}
	}
	return nil
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
	n.stopProxiesAndWait()
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
		addrs := []string{PodAddress(name)}
		for _, cidr := range s.ExtraPodCIDRs[name] {
			addrs = append(addrs, StandInAddress(cidr))
		}
		fmt.Fprintf(s.Out, "  %-10s ip netns exec %s <command>   (address %s)\n", name, PodNetns(name), strings.Join(addrs, ", "))
	}
	fmt.Fprintf(s.Out, "An API-server proxy per cluster, for in-band peering: Service %s/%s, served at its cluster IP, port %d,\n"+
		"in the gateway host %s<cluster>; it reaches only that cluster's API server.\n",
		consts.LiqoNamespace, consts.APIServerProxyService, consts.APIServerProxyPort, NetPrefix)
}
