package main

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/peerkit/terraform-provider-liqo/controllers/negotiation"
	"github.com/peerkit/terraform-provider-liqo/internal/dnsdiscovery"
	"github.com/peerkit/terraform-provider-liqo/internal/landiscovery"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// lanBrowse lists the clusters announced on the LAN, from its member m.
func lanBrowse(t *testing.T, m testenv.LANMember) []string {
	t.Helper()
	var res *dnsdiscovery.Result
	if err := netns.Do(m.NS, func() (err error) {
		res, err = landiscovery.Browse(t.Context(), landiscovery.BrowseOptions{Interface: m.Iface, Timeout: 2 * time.Second})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range res.Clusters {
		out = append(out, fmt.Sprintf("%s %s %v", c.ClusterID, c.Endpoints[0].URL(), c.TXT))
	}
	return out
}

// TestLANDiscovery: the manager announces nothing by default; with --lan-discovery its leader
// announces the cluster on the interface given (the host and port of --api-server-url, the
// cluster ID, the version and the share) and withdraws it when the manager stops.
func TestLANDiscovery(t *testing.T) {
	lan := testenv.NewLAN(t, 1, true)
	browser := lan.Members[0]
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", SkipLiqoCRDs: true})
	kc := env.Cluster("a").KubeconfigPath
	start := func(extra ...string) (context.CancelFunc, chan error) {
		probe := freeAddr(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		args := append([]string{"--kubeconfig", kc, "--cluster-id", "cl-lan", "--pod-cidr", "10.244.0.0/16",
			"--api-server-url", "https://" + lan.Addr + ":6443", "--health-probe-bind-address", probe, "--metrics-bind-address", "0"}, extra...)
		go func() { done <- run(ctx, args, io.Discard) }()
		if err := waitReady(t.Context(), probe, time.Minute, exitedFrom(done)); err != nil {
			cancel()
			t.Fatalf("not ready: %v", err)
		}
		return cancel, done
	}
	stop := func(cancel context.CancelFunc, done chan error) {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
	}

	cancel, done := start()
	time.Sleep(2 * time.Second) // the leader's runnables have started
	if got := lanBrowse(t, browser); len(got) != 0 {
		t.Errorf("without --lan-discovery the manager announces %v", got)
	}
	stop(cancel, done)

	cancel, done = start("--lan-discovery", "--lan-discovery-interface", lan.Bridge)
	want := fmt.Sprintf("[cl-lan https://%s:6443 map[cluster-id:cl-lan shares:50%% version:0.1.0]]", lan.Addr)
	testenv.EventuallyOK(t, "the manager's announcement", 30*time.Second, func() error {
		if got := fmt.Sprint(lanBrowse(t, browser)); got != want {
			return fmt.Errorf("browse found %s, want %s", got, want)
		}
		return nil
	})
	stop(cancel, done)
	if got := lanBrowse(t, browser); len(got) != 0 {
		t.Errorf("the manager has stopped, yet the cluster is still announced: %v", got)
	}
}

// The TXT key shares is the percent shared or the fixed amounts, sorted.
func TestShares(t *testing.T) {
	fixed := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourceCPU: resource.MustParse("8")}
	for _, c := range []struct {
		p    negotiation.Policy
		want string
	}{
		{negotiation.Policy{Percent: 50}, "50%"},
		{negotiation.Policy{}, "100%"},
		{negotiation.Policy{Percent: 50, Fixed: fixed}, "cpu=8,memory=16Gi"},
	} {
		if got := shares(c.p); got != c.want {
			t.Errorf("shares(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}
