package realnode

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/deploy/chart"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestDemoOnRealNodes: `make demo`'s sandbox and script where real nodes run (liqo-sandbox
// -nodes auto, as the make target calls it): the sandbox says in one line that its nodes are
// real, installs the chart with helm, and the demo peers the clusters with terraform apply,
// runs the Deployment as real containers on the provider's node and gets an answer from one
// through the tunnel; `down` leaves no process, network namespace or file.
func TestDemoOnRealNodes(t *testing.T) {
	requireRealNodes(t)
	helm := chart.Helm(t)
	images := os.Getenv(ImagesEnv)
	componentArchives(t) // skips without them
	realNodes := demoRealNodes(t)
	root, bins := buildBinaries(t, "./cmd/liqo-sandbox")
	state := filepath.Join(t.TempDir(), "sandbox")
	sb := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(bins, "liqo-sandbox"), append([]string{"-state", state, "-provider-bin", bins,
			"-nodes", "auto", "-real-nodes", strconv.Itoa(realNodes), "-images", images, "-helm", helm, "-chart", chart.Dir(t)}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := sb("up")
	envDir, _ := os.ReadFile(filepath.Join(state, "env-dir"))
	t.Cleanup(func() {
		if out, err := sb("down"); err != nil {
			t.Errorf("liqo-sandbox down: %v\n%s", err, out)
		}
		for _, dir := range []string{state, strings.TrimSpace(string(envDir))} {
			if left := testenv.ProcessesUsing(dir); len(left) > 0 {
				t.Errorf("processes left after down: %v", left)
			}
		}
		if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("state folder left after down: %v", err)
		}
		if left, _ := filepath.Glob("/run/netns/lqrn*"); len(left) > 0 {
			t.Errorf("real nodes' network namespaces left after down: %v", left)
		}
	})
	if err != nil {
		t.Fatalf("liqo-sandbox up: %v\n%s", err, out)
	}
	if lines := regexp.MustCompile(`(?m)^nodes: .*$`).FindAllString(out, -1); len(lines) != 1 || !strings.HasPrefix(lines[0], "nodes: real") {
		t.Fatalf("liqo-sandbox up says %q about its nodes, want one line \"nodes: real ...\":\n%s", lines, out)
	}
	t.Logf("liqo-sandbox up:\n%s", out)

	demo := exec.Command("bash", filepath.Join(root, "hack", "demo.sh"))
	testbed, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	demo.Env = append(os.Environ(), "SANDBOX_STATE="+state, "SANDBOX_BIN="+filepath.Join(bins, "liqo-sandbox"), "KUBECTL="+filepath.Join(testbed, "kubectl"))
	demoOut, err := demo.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/demo.sh: %v\n%s", err, demoOut)
	}
	t.Logf("demo:\n%s", demoOut)
	text := string(demoOut)
	if strings.Contains(text, "Deprecated") {
		t.Errorf("terraform warns of something deprecated in the demo")
	}
	for _, want := range []string{"nodes: real, networking = true", "containerd://", "Connected"} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	// The offloaded pod answers its own name to the consumer's pod, through the tunnel.
	m := regexp.MustCompile(`the consumer's pod demo/(\S+) runs on the provider at (\S+)\n.*answers:\n(\S+)`).FindStringSubmatch(text)
	if m == nil || m[1] != m[3] {
		t.Errorf("the demo shows no answer from the offloaded pod through the tunnel (%q)", m)
	}
	if realNodes > 1 {
		// The cross-node step: answers through the fabric agent, or a line saying it needs one.
		cross := regexp.MustCompile(`(?s)==> cross-node traffic: from the consumer's node (\S+), which has no gateway\n(.*?)(\n\n|$)`).FindStringSubmatch(text)
		switch {
		case cross == nil:
			t.Errorf("the demo with %d nodes per cluster has no cross-node step", realNodes)
		case !strings.Contains(cross[2], "answers:") && !strings.Contains(cross[2], "skipped: a pod on "+cross[1]+" reaches offloaded pods only through the fabric agent"):
			t.Errorf("the demo's cross-node step neither shows answers nor says why not:\n%s", cross[2])
		}
	}
}

// demoRealNodes is how many real nodes per cluster TestDemoOnRealNodes runs: $LIQO_SANDBOX_REAL_NODES
// (sandboxRealNodesEnv), else 1 (make demo runs 2 where the machine allows it; see the README).
func demoRealNodes(t testing.TB) int {
	t.Helper()
	v := os.Getenv(sandboxRealNodesEnv)
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", sandboxRealNodesEnv, v, err)
	}
	return n
}
