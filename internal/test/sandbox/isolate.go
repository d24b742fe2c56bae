package sandbox

// Isolated clusters (-isolate <cluster>): the cluster's controller manager runs inside the
// cluster's stand-in pod network namespace (lqsb-<cluster>-pod), as it would in a pod whose
// network reaches its own API server but no other cluster's: to try the in-band control plane
// (liqoctl peer --in-band), where a peer's API server is reached only through the tunnel and the
// peer's API-server proxy. The supervisor bridges that namespace and its own, where the API
// servers listen:
//   - inside the pod namespace, at the same 127.0.0.1:<port> as outside, a forward to the
//     cluster's own API server (so the manager's kubeconfig works unchanged); the other
//     clusters' API server addresses are refused there (nothing listens);
//   - outside, at the manager's webhook and readiness-probe addresses, forwards into the pod
//     namespace, where the manager binds them: the API server calls the webhooks, the supervisor
//     probes readiness as for any manager.
// Not bridged: the kubelet endpoints of the manager's in-process virtual nodes (logs, exec;
// --virtual-kubelet-address, 127.0.0.1 with a free port per node) are inside the pod namespace,
// so `kubectl logs` and `exec` on pods offloaded from an isolated cluster fail.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// IsolateFlag is the name of the sandbox command's flag (and of the supervisor's) that isolates
// a cluster's controller manager in the cluster's pod network namespace; IsolateArgs writes it
// back.
const IsolateFlag = "isolate"

// isolatedFile in the state folder lists the isolated clusters, one per line.
const isolatedFile = "isolated"

// ParseIsolate reads one use of IsolateFlag (a cluster's name) into into, once per cluster.
func ParseIsolate(into *[]string, v string) error {
	v = strings.TrimSpace(v)
	if v == "" {
		return fmt.Errorf("-%s needs a cluster's name, e.g. -%s consumer", IsolateFlag, IsolateFlag)
	}
	if !slices.Contains(*into, v) {
		*into = append(*into, v)
	}
	return nil
}

// IsolateArgs are the flags that give the supervisor the isolated clusters.
func (s *Sandbox) IsolateArgs() []string {
	var args []string
	for _, c := range s.Isolate {
		args = append(args, "-"+IsolateFlag, c)
	}
	return args
}

// ValidateIsolate checks the isolated clusters: each a running cluster, with KWOK nodes (real
// nodes run the manager in a real pod), and networking possible (the pod namespaces and the
// tunnel are the network's).
func (s *Sandbox) ValidateIsolate(nodes string) error {
	if len(s.Isolate) == 0 {
		return nil
	}
	return s.validateIsolate(nodes, s.networkUnsupported())
}

// validateIsolate is ValidateIsolate where networking is unsupported for reason why ("" when
// it runs).
func (s *Sandbox) validateIsolate(nodes, why string) error {
	if len(s.Isolate) == 0 {
		return nil
	}
	for _, cluster := range s.Isolate {
		if !slices.Contains(s.names(), cluster) {
			return fmt.Errorf("-%s %s: no such cluster in this sandbox (%s)", IsolateFlag, cluster, strings.Join(s.names(), ", "))
		}
	}
	if nodes == NodesReal {
		return fmt.Errorf("-%s works with KWOK nodes only (-nodes %s), not real ones", IsolateFlag, NodesKWOK)
	}
	if why != "" {
		return fmt.Errorf("-%s %s needs the sandbox's networking, which cannot run here: %s", IsolateFlag, strings.Join(s.Isolate, ","), why)
	}
	return nil
}

// isolated says whether the named cluster's controller manager runs in its pod namespace.
func (s *Sandbox) isolated(cluster string) bool { return slices.Contains(s.Isolate, cluster) }

// isolation is the supervisor's bridge for one isolated manager (see the top of this file).
type isolation struct {
	forwards []*forwarder
}

// close ends the forwards. Safe on nil.
func (i *isolation) close() error {
	if i == nil {
		return nil
	}
	var errs []error
	for _, f := range i.forwards {
		errs = append(errs, f.close())
	}
	return errors.Join(errs...)
}

// isolate opens the forwards of cluster c's isolated manager, whose probe and webhook servers
// listen at those addresses inside the cluster's pod namespace.
func (s *Sandbox) isolate(c *testenv.Cluster, probe, webhook string) (*isolation, error) {
	pod := netns.Named(PodNetns(c.Name))
	if _, err := os.Stat(pod); err != nil {
		return nil, fmt.Errorf("isolating the controller manager of %s: its pod network namespace: %w (the sandbox's network must run)", c.Name, err)
	}
	api, err := apiServerHostPort(c)
	if err != nil {
		return nil, err
	}
	iso := &isolation{}
	// Into the pod namespace: the cluster's own API server, at its address.
	ln, err := netns.Listen(pod, "tcp", api)
	if err != nil {
		return nil, fmt.Errorf("isolating the controller manager of %s: forwarding its API server: %w", c.Name, err)
	}
	iso.forwards = append(iso.forwards, forward("the API server of "+c.Name, ln, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", api)
	}, s.Out))
	// Out of the pod namespace: the manager's probe and webhook servers.
	for what, addr := range map[string]string{"readiness probe": probe, "webhook server": webhook} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("isolating the controller manager of %s: forwarding its %s: %w", c.Name, what, err), iso.close())
		}
		iso.forwards = append(iso.forwards, forward(fmt.Sprintf("the %s of %s's controller manager", what, c.Name), ln,
			func(ctx context.Context) (net.Conn, error) { return netns.DialContext(ctx, pod, "tcp", addr) }, s.Out))
	}
	return iso, nil
}

// recordIsolated writes the isolated clusters in the state folder, for printIsolatedUsage.
func (s *Sandbox) recordIsolated() error {
	if len(s.Isolate) == 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(s.StateDir, isolatedFile), []byte(strings.Join(s.Isolate, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", isolatedFile, err)
	}
	return nil
}

// printIsolatedUsage says which clusters are isolated and what that means.
func (s *Sandbox) printIsolatedUsage() {
	data, err := os.ReadFile(filepath.Join(s.StateDir, isolatedFile))
	if err != nil {
		return
	}
	clusters := strings.Fields(string(data))
	if len(clusters) == 0 {
		return
	}
	fmt.Fprintf(s.Out, "\nIsolated: the controller manager of %s runs in its pod network namespace (%s<cluster>-pod):\n"+
		"it reaches its own API server (forwarded there at the same address) and no other cluster's but through the\n"+
		"tunnel and the peer's API-server proxy (in-band peering); logs and exec of pods it offloads do not work.\n",
		strings.Join(clusters, ", "), NetPrefix)
}
