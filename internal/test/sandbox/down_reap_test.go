package sandbox_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// downReapEnv tells TestDownReapsChild where to write its real nodes' network namespaces.
const downReapEnv = "LIQO_SANDBOX_DOWN_REAP_REPORT"

// TestDownReapsChild is not a test of its own: TestDownReapsKilledRealNodes runs it in a child
// process (standing for a supervisor), where it starts a cluster with two real nodes and
// flannel (one with the bridge when flannel is not built), reports their namespaces, and hangs
// until it is killed.
func TestDownReapsChild(t *testing.T) {
	testenv.RequireLong(t, "builds and runs binaries")
	report := os.Getenv(downReapEnv)
	if report == "" {
		t.Skip("helper for TestDownReapsKilledRealNodes")
	}
	count := 1
	if _, err := testenv.FlannelBinDir(); err == nil {
		count = 2
	}
	env := testenv.New(t, testenv.ClusterOptions{Name: "reaped", RealNode: &testenv.RealNodeOptions{}, RealNodes: count})
	var netns []string
	for _, n := range env.Cluster("reaped").RealNodes {
		netns = append(netns, n.Netns)
	}
	if err := os.WriteFile(report, []byte(strings.Join(netns, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Minute)
}

// TestDownReapsKilledRealNodes: `liqo-sandbox down` after a supervisor was killed outright
// (its real nodes' containerd shims and network namespaces left, flannel's links in them)
// removes every node, as the next real node's start would.
func TestDownReapsKilledRealNodes(t *testing.T) {
	if _, err := testenv.RealNodeBinDir(); err != nil {
		t.Skip(err)
	}
	var netns []string
	tmp := testenv.KillChildAfterReport(t, "TestDownReapsChild", downReapEnv, func(report []byte) bool {
		netns = strings.Fields(string(report))
		return len(netns) > 0
	})
	for _, ns := range netns {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err != nil {
			t.Fatalf("after the kill, want node namespace %s left: %v", ns, err)
		}
	}
	s := &sandbox.Sandbox{StateDir: filepath.Join(t.TempDir(), "state"), Out: io.Discard}
	if err := s.Down(t.Context()); err != nil {
		t.Fatalf("down: %v", err)
	}
	for _, ns := range netns {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after down, node namespace %s left (stat: %v)", ns, err)
		}
		link := strings.Split(ns, "-")[0] + "h"
		if _, err := os.Stat("/sys/class/net/" + link); err == nil {
			t.Errorf("after down, host link %s left", link)
		}
		if _, err := os.Stat(filepath.Join("/run/liqo-testenv-realnodes", ns+".json")); err == nil {
			t.Errorf("after down, the record of node %s left", ns)
		}
	}
	if left := testenv.ProcessesUsing(tmp + "/"); len(left) > 0 {
		t.Errorf("after down, processes of the killed nodes left: %v", left)
	}
	t.Logf("%d killed real nodes reaped by down", len(netns))
}
