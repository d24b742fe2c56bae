package sandbox_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestSandboxUpDown runs the sandbox command as a user does: `up` returns with two reachable
// clusters (the provider's KWOK nodes Ready), a second `up` finds it running, `down` leaves no
// process and no file.
func TestSandboxUpDown(t *testing.T) {
	testenv.RequireLong(t, "builds and runs binaries")
	binDir, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	bins := t.TempDir()
	bin, managerBin := filepath.Join(bins, "liqo-sandbox"), filepath.Join(bins, "liqo-controller-manager")
	if out, err := exec.Command("go", "build", "-o", bins, "../../../cmd/liqo-sandbox", "../../../cmd/liqo-controller-manager").CombinedOutput(); err != nil {
		t.Fatalf("building liqo-sandbox and liqo-controller-manager: %v\n%s", err, out)
	}
	state := filepath.Join(t.TempDir(), "state")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"-state", state, "-manager-bin", managerBin, "-gateway-bin", ""}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("liqo-sandbox %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { _, _ = exec.Command(bin, "-state", state, "down").CombinedOutput() })

	out := run("up")
	if !strings.Contains(out, "clusters up in") || !strings.Contains(out, "TF_CLI_CONFIG_FILE=") {
		t.Errorf("up printed:\n%s", out)
	}
	// No gateway binary is given here: the sandbox says networking is disabled and why, tells
	// how to peer without it, and records it for `make demo`.
	if !strings.Contains(out, "Networking disabled: no gateway binary given") || !strings.Contains(out, "Peer with networking = false.") {
		t.Errorf("up did not say that networking is disabled, why, and what to do:\n%s", out)
	}
	if got, err := os.ReadFile(filepath.Join(state, "networking")); err != nil || !strings.HasPrefix(string(got), "disabled: no gateway binary given") {
		t.Errorf("networking state %q, %v; want it disabled with the reason", got, err)
	}
	envDir, err := os.ReadFile(filepath.Join(state, "env-dir"))
	if err != nil {
		t.Fatal(err)
	}
	kubectlCache := t.TempDir() // kubectl's discovery cache, instead of ~/.kube/cache
	kubectl := func(cluster string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "kubectl"), append([]string{
			"--kubeconfig", filepath.Join(state, cluster+".kubeconfig"), "--cache-dir", kubectlCache}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v on %s: %v\n%s", args, cluster, err, out)
		}
		return string(out)
	}
	nodes := kubectl("provider", "get", "nodes", "--no-headers")
	if strings.Count(nodes, " Ready ") != 2 || !strings.Contains(nodes, "provider-node-1") {
		t.Errorf("provider nodes:\n%s", nodes)
	}
	if got := kubectl("consumer", "get", "namespace", "demo", "-o", "name"); !strings.Contains(got, "namespace/demo") {
		t.Errorf("consumer has no demo namespace for the examples: %s", got)
	}
	if got := kubectl("consumer", "get", "crd", "foreignclusters.core.liqo.io", "-o", "name"); !strings.Contains(got, "foreignclusters") {
		t.Errorf("consumer has no ForeignCluster CRD: %s", got)
	}
	// Each cluster runs our controller manager, which recorded the cluster's name as its ID.
	for _, cluster := range []string{"consumer", "provider"} {
		got := kubectl(cluster, "get", "configmap", "-n", "liqo", "liqo-clusterid-configmap", "-o", "jsonpath={.data.CLUSTER_ID}")
		if got != cluster {
			t.Errorf("cluster ID recorded by the controller manager of %s: %q", cluster, got)
		}
	}
	if rc, err := os.ReadFile(filepath.Join(state, "terraformrc")); err != nil || !strings.Contains(string(rc), "dev_overrides") {
		t.Errorf("terraformrc: %v\n%s", err, rc)
	}

	if out := run("up"); !strings.Contains(out, "already running") {
		t.Errorf("second up printed:\n%s", out)
	}

	run("down")
	if left := testenv.ProcessesUsing(string(envDir)); len(left) > 0 {
		t.Errorf("processes left after down: %v", left)
	}
	for _, p := range []string{state, string(envDir)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after down (stat: %v)", p, err)
		}
	}
}
