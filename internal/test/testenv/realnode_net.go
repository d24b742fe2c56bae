package testenv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The real nodes' uplinks: node k gets the k-th /30 of nodeLinkPool, the host side its first
// address, the node (in its network namespace) the second.
const (
	nodeLinkPool = "10.253.0.0/16"
	maxRealNodes = 256
	netnsDir     = "/run/netns"
	// linkPrefix names the host side of node k's veth pair lqrn<k>h and its namespace
	// lqrn<k>-<cluster>.
	linkPrefix = "lqrn"
	// iptablesComment marks the host's iptables rules of the real nodes.
	iptablesComment = "liqo-testenv-realnode"
)

// nodeNetwork is a real node's network namespace and its link to the host.
type nodeNetwork struct {
	index    int
	netns    string // name under /run/netns
	hostLink string // host side of the veth pair; the node side is eth0 in netns
	hostIP   string // the host side's address: the API server listens there
	nodeIP   string // eth0's address in netns: the node's InternalIP
	subnet   string // the /30 of both
	podCIDR  string
	// routed: the host routes podCIDR to the node (false when another node has the route).
	routed    bool
	hostRules [][]string // the host's iptables rules (table, chain, rule...) to delete
}

// linkAddrs returns the /30, host and node addresses of uplink k.
func linkAddrs(k int) (subnet, host, node string) {
	_, pool, _ := net.ParseCIDR(nodeLinkPool)
	base := binary.BigEndian.Uint32(pool.IP.To4())
	ip := func(i int) string {
		off := uint32(k*4 + i) //nolint:gosec // k < maxRealNodes, i < 4
		return netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, base+off))).String()
	}
	return ip(0) + "/30", ip(1), ip(2)
}

// setupNodeNetwork claims a free uplink (its veth pair's creation is the claim), creates the
// node's network namespace with the node side as eth0 and a default route via the host, NAT
// for what the pods (in podCIDR) send out of eth0, and on the host: a route to routeCIDR via the
// node (unless another node has one, or routeCIDR is empty: see routePods) and NAT for what
// leaves the node. On error it removes what it made.
func setupNodeNetwork(ctx context.Context, cluster, podCIDR, routeCIDR string) (n *nodeNetwork, err error) {
	for k := range maxRealNodes {
		host := linkPrefix + strconv.Itoa(k) + "h"
		if stale, _ := filepath.Glob(filepath.Join(netnsDir, linkPrefix+strconv.Itoa(k)+"-*")); len(stale) > 0 {
			continue
		}
		if _, err := run(ctx, "ip", "link", "add", host, "type", "veth", "peer", "name", linkPrefix+strconv.Itoa(k)+"n"); err != nil {
			continue // in use
		}
		n = &nodeNetwork{index: k, netns: linkPrefix + strconv.Itoa(k) + "-" + cluster, hostLink: host, podCIDR: podCIDR}
		n.subnet, n.hostIP, n.nodeIP = linkAddrs(k)
		break
	}
	if n == nil {
		return nil, fmt.Errorf("real node of %s: no free uplink among %d (ip link add failed for each)", cluster, maxRealNodes)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.remove(context.WithoutCancel(ctx)))
		}
	}()
	ns := []string{"-n", n.netns}
	steps := [][]string{
		{"netns", "add", n.netns},
		{"link", "set", linkPrefix + strconv.Itoa(n.index) + "n", "netns", n.netns},
		append(ns, "link", "set", linkPrefix+strconv.Itoa(n.index)+"n", "name", "eth0"),
		append(ns, "addr", "add", n.nodeIP+"/30", "dev", "eth0"),
		append(ns, "link", "set", "eth0", "up"),
		append(ns, "link", "set", "lo", "up"),
		{"addr", "add", n.hostIP + "/30", "dev", n.hostLink},
		{"link", "set", n.hostLink, "up"},
		append(ns, "route", "add", "default", "via", n.hostIP),
	}
	for _, s := range steps {
		if _, err := run(ctx, "ip", s...); err != nil {
			return n, fmt.Errorf("real node of %s: %w", cluster, err)
		}
	}
	// The host forwards what comes from the node (and only that: forwarding is on for the
	// host side of this link, not for the whole host), so that nodes reach each other and,
	// through the NAT below, what the host reaches.
	if err := os.WriteFile(filepath.Join("/proc/sys/net/ipv4/conf", n.hostLink, "forwarding"), []byte("1\n"), 0o644); err != nil {
		return n, fmt.Errorf("real node of %s: turning on forwarding from %s: %w", cluster, n.hostLink, err)
	}
	// The node forwards between its pods' bridge and eth0; bridged traffic goes through
	// iptables (kube-proxy's Services between pods of the node); what pods send out of eth0
	// leaves with the node's address, so the host answers it whatever the pod CIDR.
	sysctls := "echo 1 > /proc/sys/net/ipv4/ip_forward && echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables"
	if err := n.run(ctx, "sh", "-c", sysctls); err != nil {
		return n, fmt.Errorf("real node of %s: %w", cluster, err)
	}
	if err := n.run(ctx, "iptables", "-w", "-t", "nat", "-A", "POSTROUTING", "-s", podCIDR, "-o", "eth0", "-j", "MASQUERADE"); err != nil {
		return n, fmt.Errorf("real node of %s: %w", cluster, err)
	}
	// Between two nodes the host forwards only what goes from one node's address to another's,
	// unchanged, as on a network the nodes share (a gateway's tunnel runs there); never what is
	// addressed to pods: pods of two clusters talk through their gateways, not through the
	// host. The rules between nodes go first in FORWARD (inserted), before any node's general
	// ones (appended), so that they hold whichever node came first.
	for _, rule := range []struct {
		insert bool
		spec   []string // table, chain, match and target
	}{
		{false, []string{"nat", "POSTROUTING", "-s", n.subnet, "-d", nodeLinkPool, "-o", linkPrefix + "+", "-j", "RETURN"}},
		{false, []string{"nat", "POSTROUTING", "-s", n.subnet, "!", "-o", n.hostLink, "-j", "MASQUERADE"}},
		{true, []string{"filter", "FORWARD", "-i", n.hostLink, "-o", linkPrefix + "+", "-j", "DROP"}},
		{true, []string{"filter", "FORWARD", "-i", n.hostLink, "-s", n.nodeIP, "-d", nodeLinkPool, "-o", linkPrefix + "+", "-j", "ACCEPT"}},
		{false, []string{"filter", "FORWARD", "-i", n.hostLink, "-j", "ACCEPT"}},
		{false, []string{"filter", "FORWARD", "-o", n.hostLink, "-j", "ACCEPT"}},
	} {
		spec := append(append([]string(nil), rule.spec[1:]...), "-m", "comment", "--comment", iptablesComment+" "+n.hostLink)
		args := []string{"-w", "-t", rule.spec[0], "-A"}
		if rule.insert {
			args = []string{"-w", "-t", rule.spec[0], "-I", spec[0], "1"}
			args = append(args, spec[1:]...)
		} else {
			args = append(args, spec...)
		}
		if _, err := run(ctx, "iptables", args...); err != nil {
			return n, fmt.Errorf("real node of %s: %w", cluster, err)
		}
		n.hostRules = append(n.hostRules, append([]string{rule.spec[0]}, spec...))
	}
	if routeCIDR != "" {
		if err := n.routePods(ctx, routeCIDR); err != nil {
			return n, fmt.Errorf("real node of %s: %w", cluster, err)
		}
	}
	return n, nil
}

// routePods routes cidr, the node's pods' addresses, from the host to the node: the API server
// reaches the node's pods (admission webhooks, aggregated APIs) through this route. Two nodes
// with the same pod CIDR cannot both have it: the second one is left without (routed false).
// The route goes with the host link.
func (n *nodeNetwork) routePods(ctx context.Context, cidr string) error {
	if _, err := run(ctx, "ip", "route", "add", cidr, "via", n.nodeIP, "dev", n.hostLink); err == nil {
		n.routed = true
	} else if !strings.Contains(err.Error(), "File exists") {
		return err
	}
	return nil
}

// path is the namespace's file, for nsenter --net.
func (n *nodeNetwork) path() string { return filepath.Join(netnsDir, n.netns) }

// command is name with args run in the node's network namespace, in the host's mount
// namespace (nsenter --net, not `ip netns exec`, which makes a mount namespace of its own).
func (n *nodeNetwork) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.path(), "--", name}, args...)...)
}

// run runs name with args in the node's network namespace; the error includes the output.
func (n *nodeNetwork) run(ctx context.Context, name string, args ...string) error {
	if out, err := n.command(ctx, name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s in %s: %w: %s", name, strings.Join(args, " "), n.netns, err, out)
	}
	return nil
}

// remove deletes the host's rules, the namespace (and with it eth0 and its bridge) and the
// host side of the veth pair (and with it the route). What is already gone is no error.
func (n *nodeNetwork) remove(ctx context.Context) error {
	var errs []error
	for _, r := range n.hostRules {
		args := append([]string{"-w", "-t", r[0], "-D"}, r[1:]...)
		if out, err := run(ctx, "iptables", args...); err != nil && !strings.Contains(out, "does a matching rule exist") && !strings.Contains(out, "Bad rule") {
			errs = append(errs, err)
		}
	}
	if _, err := os.Stat(n.path()); err == nil {
		if _, err := run(ctx, "ip", "netns", "del", n.netns); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := net.InterfaceByName(n.hostLink); err == nil {
		// The namespace's deletion takes the veth pair with it, asynchronously: the host side
		// may go between the look-up and the deletion ("No such device").
		if out, err := run(ctx, "ip", "link", "del", n.hostLink); err != nil && !strings.Contains(out, "Cannot find device") && !strings.Contains(out, "No such device") {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("removing the network of real node %s: %w", n.netns, err)
	}
	return nil
}

// run runs a host command and returns its combined output; the error includes it.
func run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
