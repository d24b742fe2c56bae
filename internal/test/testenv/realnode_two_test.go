package testenv_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestRealNodeTwoClusters: two clusters with a real node each, at the same time, with distinct
// and with the same pod CIDR: both nodes Ready, a pod Running on each, each pod answering from
// its own node's network namespace (with the same CIDR the two pods may even have the same IP),
// node a reaching node b's address,
// the host routing to each node's pods only while the CIDRs differ, and no pod reaching the
// other cluster's pods through the host. After Stop nothing is left.
func TestRealNodeTwoClusters(t *testing.T) {
	needRealNode(t)
	for _, tc := range []struct {
		name       string
		cidrA      string
		cidrB      string
		bothRouted bool
	}{
		{"distinct pod CIDRs", "10.244.0.0/16", "10.245.0.0/16", true},
		{"same pod CIDR", "10.244.0.0/16", "10.244.0.0/16", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			env, err := testenv.Start(t.Context(),
				testenv.ClusterOptions{Name: "a", PodCIDR: tc.cidrA, RealNode: &testenv.RealNodeOptions{}},
				testenv.ClusterOptions{Name: "b", PodCIDR: tc.cidrB, RealNode: &testenv.RealNodeOptions{}})
			if err != nil {
				t.Fatalf("starting two clusters with real nodes: %v", err)
			}
			stopped := false
			t.Cleanup(func() {
				if !stopped {
					_ = env.Stop()
				}
			})
			a, b := env.Cluster("a"), env.Cluster("b")
			t.Logf("two clusters with real nodes up in %s (nodes Ready %s and %s after containerd's start)",
				time.Since(start).Round(time.Millisecond), a.RealNode.ReadyIn.Round(time.Millisecond), b.RealNode.ReadyIn.Round(time.Millisecond))
			if a.RealNode.Netns == b.RealNode.Netns || a.RealNode.IP == b.RealNode.IP {
				t.Fatalf("nodes share namespace or IP: %s/%s, %s/%s", a.RealNode.Netns, a.RealNode.IP, b.RealNode.Netns, b.RealNode.IP)
			}
			routed := 0
			for _, c := range []*testenv.Cluster{a, b} {
				if c.RealNode.RoutedFromHost {
					routed++
				}
			}
			if tc.bothRouted && routed != 2 || !tc.bothRouted && routed != 1 {
				t.Errorf("%d of the nodes' pod CIDRs routed from the host, want %d", routed, map[bool]int{true: 2, false: 1}[tc.bothRouted])
			}

			podA := runningPods(t, a, createDeployment(t, a), 90*time.Second)[0]
			podB := runningPods(t, b, createDeployment(t, b), 90*time.Second)[0]
			t.Logf("pods %s (%s) and %s (%s) Running", podA.Name, podA.Status.PodIP, podB.Name, podB.Status.PodIP)
			for _, x := range []struct {
				c    *testenv.Cluster
				pod  string
				url  string
				want bool
			}{
				{a, podA.Name, podURL(podA, "/"), true},
				{b, podB.Name, podURL(podB, "/"), true},
				// Never pod B from cluster a's node: with distinct CIDRs the host does not
				// forward between nodes; with the same one the address is a's own pod's.
				{a, podB.Name, podURL(podB, "/"), false},
				// Nor the other way round, whichever node came first.
				{b, podA.Name, podURL(podA, "/"), false},
			} {
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
				body, err := httpGet(ctx, x.c.RealNode, x.url)
				cancel()
				if got := err == nil && body == x.pod; got != x.want {
					t.Errorf("GET %s from the node of %s answered by %s: %t (%q, %v), want %t", x.url, x.c.Name, x.pod, got, body, err, x.want)
				}
			}
			// The nodes share a network: node a reaches node b's kubelet at b's address (a
			// gateway's tunnel runs there).
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			conn, err := a.RealNode.DialContext(ctx, "tcp", net.JoinHostPort(b.RealNode.IP, "10250"))
			cancel()
			if err != nil {
				t.Errorf("node a to node b's kubelet at %s: %v", b.RealNode.IP, err)
			} else {
				_ = conn.Close()
			}

			stopped = true
			if err := env.Stop(); err != nil {
				t.Fatalf("stopping: %v", err)
			}
			assertNoLeftovers(t, env, []*testenv.RealNode{a.RealNode, b.RealNode}, nil)
		})
	}
}
