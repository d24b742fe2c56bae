package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/nsping"
	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
)

// expectPodTraffic pings, from each named cluster's stand-in pod (a network namespace the
// sandbox runs behind the cluster's gateway host), the stand-in pod of each other named
// cluster: the pod CIDRs are routed only through the tunnels.
func (r *sandboxRun) expectPodTraffic(t *testing.T, what string, pairs ...[2]string) {
	t.Helper()
	for _, p := range pairs {
		rtt, err := nsping.Ping(sandbox.PodNetns(p[0]), sandbox.PodAddress(p[1]), 3)
		if err != nil {
			t.Errorf("%s: no pod-to-pod traffic from %s's pod to %s's pod (%s) through the tunnel: %v",
				what, p[0], p[1], sandbox.PodAddress(p[1]), err)
			continue
		}
		t.Logf("%s: ping %s pod -> %s pod (%s) through the tunnel, average RTT %s", what, p[0], p[1], sandbox.PodAddress(p[1]), rtt)
	}
}

// expectNoPodTraffic checks that a stand-in pod cannot reach another cluster's once no tunnel
// joins them.
func (r *sandboxRun) expectNoPodTraffic(t *testing.T, what string, from, to string) {
	t.Helper()
	if _, err := nsping.Ping(sandbox.PodNetns(from), sandbox.PodAddress(to), 1); err == nil {
		t.Errorf("%s: %s's pod still reaches %s's pod (%s)", what, from, to, sandbox.PodAddress(to))
	}
}

// gatewayInterfaces lists the tunnel (TUN) interfaces in the sandbox's network namespaces and
// in the root one: each gateway makes one and removes it when it stops.
func gatewayInterfaces() ([]string, error) {
	namespaces := []string{""} // the root network namespace
	entries, err := os.ReadDir("/var/run/netns")
	if err != nil {
		return nil, fmt.Errorf("listing the network namespaces: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), sandbox.NetPrefix) {
			namespaces = append(namespaces, e.Name())
		}
	}
	if len(namespaces) == 1 {
		return nil, fmt.Errorf("no network namespace %s* in /var/run/netns: is the sandbox's network up?", sandbox.NetPrefix)
	}
	var found []string
	for _, ns := range namespaces {
		args := []string{"-o", "link", "show", "type", "tun"}
		where := "the root network namespace"
		if ns != "" {
			args = append([]string{"-n", ns}, args...)
			where = ns
		}
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			// "7: lqsbs1a2b3c4d: <POINTOPOINT,...> mtu 1340 ..."
			if f := strings.Fields(line); len(f) > 1 {
				found = append(found, strings.TrimSuffix(f[1], ":")+" in "+where)
			}
		}
	}
	return found, nil
}
