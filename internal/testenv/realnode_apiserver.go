package testenv

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
)

// prepareRealNode, for a cluster with a real node, checks that one can run here, makes the
// node's network and configures the API server for it: it listens on and advertises the host
// side of the node's link (its serving certificate names that address; pods reach it through
// the `kubernetes` Service and kube-proxy, and verify its certificate there), authorizes kubelets with the Node authorizer,
// admits ServiceAccounts (projected tokens in pods), and routes to endpoints (admission
// webhooks and aggregated APIs served by pods). It returns the real node's binary folder and
// opts with what a real node implies. Without a real node it does nothing.
func (c *Cluster) prepareRealNode(ctx context.Context, opts ClusterOptions) (string, ClusterOptions, error) {
	if opts.RealNode == nil {
		return "", opts, nil
	}
	binDir, err := RealNodeBinDir()
	if err != nil {
		return "", opts, err
	}
	opts.Scheduler, opts.ControllerManager, opts.KubeletAPI = true, true, true
	podCIDR := orDefault(opts.RealNode.PodCIDR, orDefault(opts.PodCIDR, "10.244.0.0/16"))
	if _, _, err := net.ParseCIDR(podCIDR); err != nil {
		return "", opts, fmt.Errorf("real node: pod CIDR %q: %w", podCIDR, err)
	}
	if err := ReapStaleRealNodes(ctx); err != nil {
		return "", opts, err
	}
	if c.nodeNet, err = setupNodeNetwork(ctx, c.Name, podCIDR); err != nil {
		return "", opts, err
	}
	if err := writeRecord(c.nodeNet, filepath.Join(c.Dir, "rn")); err != nil {
		return "", opts, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(c.nodeNet.hostIP, "0"))
	if err != nil {
		return "", opts, fmt.Errorf("real node: finding a free port on %s: %w", c.nodeNet.hostIP, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := c.env.ControlPlane.APIServer
	s.Address, s.Port = c.nodeNet.hostIP, strconv.Itoa(port)
	if s.CA, err = writeServingCerts(s.CertDir, c.nodeNet.hostIP); err != nil {
		return "", opts, fmt.Errorf("real node: %w", err)
	}
	args := s.Configure()
	args.Set("advertise-address", c.nodeNet.hostIP)
	args.Set("authorization-mode", "Node,RBAC")
	args.Disable("disable-admission-plugins") // envtest disables ServiceAccount
	args.Set("enable-admission-plugins", "NodeRestriction")
	args.Set("enable-aggregator-routing", "true")
	return binDir, opts, nil
}
