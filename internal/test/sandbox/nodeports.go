package sandbox

// NodePort gateway servers, when networking runs. No kube-proxy runs in the sandbox, so the
// supervisor plays its part on the gateway host: a UDP packet that reaches the gateway host at a
// GatewayServer's node port goes to the port the server's gateway listens on (an iptables
// REDIRECT in the host's own chain). A client configured with the gateway host's address and the
// node port, as in examples/declarative, then reaches the server.

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// nodePortChain is the nat chain holding the gateway host's node-port rules.
const nodePortChain = "LQSB-NODEPORTS"

// nodePortRules returns the rules (iptables arguments after the chain) that send each node port
// of the GatewayServers' NodePort Services to its target port, sorted.
func nodePortRules(svcs []corev1.Service) []string {
	var rules []string
	for i := range svcs {
		svc := &svcs[i]
		if svc.Spec.Type != corev1.ServiceTypeNodePort || !ofGatewayServer(svc) {
			continue
		}
		for _, p := range svc.Spec.Ports {
			target := p.TargetPort.IntValue()
			if target == 0 {
				target = int(p.Port)
			}
			if p.NodePort == 0 || target == 0 {
				continue
			}
			proto := strings.ToLower(string(p.Protocol))
			if proto == "" {
				proto = "tcp"
			}
			rules = append(rules, fmt.Sprintf("-p %s --dport %d -j REDIRECT --to-ports %d", proto, p.NodePort, target))
		}
	}
	slices.Sort(rules)
	return slices.Compact(rules)
}

// ofGatewayServer tells whether a GatewayServer controls the Service.
func ofGatewayServer(svc *corev1.Service) bool {
	owner := metav1.GetControllerOf(svc)
	return owner != nil && owner.Kind == "GatewayServer" && strings.HasPrefix(owner.APIVersion, netv1beta1.GroupVersion.Group+"/")
}

// syncNodePorts writes the cluster's node-port rules into its gateway host when they changed.
func (w *clusterWatch) syncNodePorts(ctx context.Context) error {
	svcs := &corev1.ServiceList{}
	if err := w.reader.List(ctx, svcs); err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	rules := nodePortRules(svcs.Items)
	if w.nodePorts != nil && slices.Equal(*w.nodePorts, rules) {
		return nil
	}
	ns := HostNetns(w.name)
	ipt := func(args ...string) error {
		out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, "iptables", "-w", "-t", "nat"}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("iptables %s in %s: %w: %s", strings.Join(args, " "), ns, err, bytes.TrimSpace(out))
		}
		return nil
	}
	// The chain, jumped to from PREROUTING for what comes from the bridge, made on the first
	// sync (or found from a sync that failed half-way), then emptied and refilled.
	if w.nodePorts == nil && ipt("-N", nodePortChain) == nil {
		if err := ipt("-A", "PREROUTING", "-i", "ul0", "-j", nodePortChain); err != nil {
			return err
		}
	} else if err := ipt("-F", nodePortChain); err != nil {
		return err
	}
	for _, r := range rules {
		if err := ipt(append([]string{"-A", nodePortChain}, strings.Fields(r)...)...); err != nil {
			return err
		}
		fmt.Fprintf(w.r.out, "node port on %s (%s): %s\n", w.name, HostAddress(w.name), r)
	}
	w.nodePorts = &rules
	return nil
}
