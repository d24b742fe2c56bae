package testenv

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
)

// prepareRealNode, for a cluster with real nodes, checks that they can run here, makes the
// nodes' networks (and, with flannel, has the controller manager allocate each node a pod
// CIDR) and configures the API server for it: it listens on and advertises the host
// side of the node's link (its serving certificate names that address; pods reach it through
// the `kubernetes` Service and kube-proxy, and verify its certificate there), authorizes kubelets with the Node authorizer,
// admits ServiceAccounts (projected tokens in pods), and routes to endpoints (admission
// webhooks and aggregated APIs served by pods). It returns the real node's binary folder and
// opts with what a real node implies. Without a real node it does nothing.
func (c *Cluster) prepareRealNode(ctx context.Context, opts ClusterOptions) (string, ClusterOptions, error) {
	if opts.RealNode == nil && opts.RealNodes == 0 {
		return "", opts, nil
	}
	if opts.RealNode == nil {
		opts.RealNode = &RealNodeOptions{}
	}
	count := max(opts.RealNodes, 1)
	binDir, err := RealNodeBinDir()
	if err != nil {
		return "", opts, err
	}
	opts.Scheduler, opts.ControllerManager, opts.KubeletAPI = true, true, true
	podCIDR := orDefault(opts.RealNode.PodCIDR, orDefault(opts.PodCIDR, "10.244.0.0/16"))
	if _, _, err := net.ParseCIDR(podCIDR); err != nil {
		return "", opts, fmt.Errorf("real node: pod CIDR %q: %w", podCIDR, err)
	}
	routeCIDR := podCIDR
	if c.flannelBin, err = flannelFor(opts.RealNode.CNI, count); err != nil {
		return "", opts, err
	}
	if c.flannelBin != "" {
		// Each node's pods take a /24 of podCIDR that the controller manager allocates
		// (Node.spec.podCIDR) and flannel leases; the host routes it once it is known.
		routeCIDR = ""
		opts.ControllerManagerArgs = append(append([]string(nil), opts.ControllerManagerArgs...),
			"--allocate-node-cidrs=true", "--cluster-cidr="+podCIDR, "--node-cidr-mask-size="+strconv.Itoa(flannelNodeMask))
	}
	if err := ReapStaleRealNodes(ctx); err != nil {
		return "", opts, err
	}
	for i := range count {
		n, err := setupNodeNetwork(ctx, c.Name, podCIDR, routeCIDR)
		if err != nil {
			return "", opts, err
		}
		c.nodeNets = append(c.nodeNets, n)
		if err := writeRecord(n, c.realNodeDir(i)); err != nil {
			return "", opts, err
		}
	}
	return binDir, opts, c.listenForNodes()
}

// realNodeDir is the folder of the cluster's i-th real node: rn, rn2, rn3...
func (c *Cluster) realNodeDir(i int) string {
	return filepath.Join(c.Dir, "rn"+realNodeSuffix(i))
}

// realNodeSuffix ends the names of the i-th real node's folder and Node: "" for the first,
// then 2, 3...
func realNodeSuffix(i int) string {
	if i == 0 {
		return ""
	}
	return strconv.Itoa(i + 1)
}

// listenForNodes configures the API server for the real nodes: it listens on and advertises
// the host side of the first node's link (every node reaches it through the host).
func (c *Cluster) listenForNodes() error {
	hostIP := c.nodeNets[0].hostIP
	l, err := net.Listen("tcp", net.JoinHostPort(hostIP, "0"))
	if err != nil {
		return fmt.Errorf("real node: finding a free port on %s: %w", hostIP, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := c.env.ControlPlane.APIServer
	s.Address, s.Port = hostIP, strconv.Itoa(port)
	if s.CA, err = writeServingCerts(s.CertDir, hostIP); err != nil {
		return fmt.Errorf("real node: %w", err)
	}
	args := s.Configure()
	args.Set("advertise-address", hostIP)
	args.Set("authorization-mode", "Node,RBAC")
	args.Disable("disable-admission-plugins") // envtest disables ServiceAccount
	args.Set("enable-admission-plugins", "NodeRestriction")
	args.Set("enable-aggregator-routing", "true")
	return nil
}
