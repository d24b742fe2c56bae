package testenv

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// realNodeStart is what starting one of the cluster's real nodes takes, kept for AddRealNode.
type realNodeStart struct {
	binDir, clusterCIDR string
	authn               *diskCertAuthn
	opts                RealNodeOptions
	archives            []string
}

// newRealNode makes the cluster's next real node on network nn (not started) and adds it to
// c.RealNodes, so that the cluster's stop removes whatever of it starts.
func (c *Cluster) newRealNode(nn *nodeNetwork) (*RealNode, error) {
	s, i := c.nodeStart, c.nodesMade
	base := orDefault(s.opts.Name, c.Name+"-node")
	n := &RealNode{
		Name: base + realNodeSuffix(i), IP: nn.nodeIP, HostIP: nn.hostIP,
		PodCIDR: nn.podCIDR, Netns: nn.netns, RoutedFromHost: nn.routed,
		Dir: c.realNodeDir(i), binDir: s.binDir, flannelBin: c.flannelBin, clusterCIDR: s.clusterCIDR,
		logDir: filepath.Join(c.Dir, "logs", "node"+realNodeSuffix(i)), net: nn,
	}
	if i == 0 {
		n.logDir = filepath.Join(c.Dir, "logs") // as with one node
	}
	// Unix socket paths have at most 107 bytes; kubelet's longest is its pod-resources one.
	if longest := filepath.Join(n.Dir, "k", "pod-resources", "kubelet.sock"); len(longest) > 107 {
		return nil, fmt.Errorf("real node %s: the cluster's folder is too deep for kubelet's and containerd's sockets (%s is longer than 107 bytes): use a shorter TMPDIR", n.Name, longest)
	}
	c.nodesMade++
	c.RealNodes = append(c.RealNodes, n)
	return n, nil
}

// startRealNode starts n, one of c.RealNodes, and waits until it is Ready.
func (c *Cluster) startRealNode(ctx context.Context, n *RealNode) error {
	s := c.nodeStart
	return n.start(ctx, c.Client, s.authn, c.Config, filepath.Join(c.Dir, "certs"), s.opts, s.archives)
}

// AddRealNode starts one more real node in the running cluster, as its first ones were (same
// options, CNI and images; the next name: <cluster>-node3...), and waits until it is Ready. It
// is in c.RealNodes from the start, so that the Env's Stop removes it, as the stale-node
// reaper does when the test is killed. The cluster must have started with real nodes.
func (c *Cluster) AddRealNode(ctx context.Context) (*RealNode, error) {
	if c.nodeStart == nil || len(c.nodeNets) == 0 {
		return nil, fmt.Errorf("cluster %s: adding a real node: the cluster has none (set ClusterOptions.RealNodes)", c.Name)
	}
	routeCIDR := c.nodeNets[0].podCIDR
	if c.flannelBin != "" {
		routeCIDR = "" // the node's /24, once kube-controller-manager allocates it
	}
	nn, err := setupNodeNetwork(ctx, c.Name, c.nodeNets[0].podCIDR, routeCIDR)
	if err != nil {
		return nil, err
	}
	c.nodeNets = append(c.nodeNets, nn)
	if err := writeRecord(nn, c.realNodeDir(c.nodesMade)); err != nil {
		return nil, err
	}
	n, err := c.newRealNode(nn)
	if err != nil {
		return nil, err
	}
	if err := c.startRealNode(ctx, n); err != nil {
		return n, fmt.Errorf("cluster %s: adding a real node: %w", c.Name, err)
	}
	return n, nil
}

// RemoveRealNode ends real node n of c as a failed machine would go (its processes and its
// pods' killed, its network namespace and host link removed: nothing of it is left on the
// host, see Leftovers) and drops it from c.RealNodes. Its Node object stays, as when a machine
// dies: deleting it is up to the test (an admin's or an autoscaler's part).
func (c *Cluster) RemoveRealNode(ctx context.Context, n *RealNode) error {
	i := slices.Index(c.RealNodes, n)
	if i < 0 {
		return fmt.Errorf("cluster %s: removing real node %s: not one of the cluster's", c.Name, n.Name)
	}
	err := n.stop(ctx)
	if netErr := n.net.remove(ctx); netErr == nil {
		removeRecord(n.net)
	} else {
		err = errors.Join(err, netErr)
	}
	c.RealNodes = slices.Delete(c.RealNodes, i, i+1)
	c.nodeNets = slices.DeleteFunc(c.nodeNets, func(nn *nodeNetwork) bool { return nn == n.net })
	if c.RealNode == n {
		c.RealNode = nil
		if len(c.RealNodes) > 0 {
			c.RealNode = c.RealNodes[0]
		}
	}
	if err != nil {
		return fmt.Errorf("cluster %s: removing real node %s: %w", c.Name, n.Name, err)
	}
	return nil
}
