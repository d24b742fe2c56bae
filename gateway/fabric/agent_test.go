package fabric

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// rssKiB is the resident set of process pid, from /proc.
func rssKiB(tb testing.TB, pid int) int {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatalf("no VmRSS for process %d", pid)
	return 0
}

// TestAgentAppliesAndCleansUp runs cmd/liqo-fabric in a namespace with a gateway's configuration
// towards 10 nodes of 20 pods: it makes the links, stays within 40 MiB of RSS, and removes
// everything on SIGTERM.
func TestAgentAppliesAndCleansUp(t *testing.T) {
	testenv.RequireNetAdmin(t)
	ns := testenv.NewNetns(t, "lqfa")
	dir := t.TempDir()
	bin := filepath.Join(dir, "liqo-fabric")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/peerkit/terraform-provider-liqo/cmd/liqo-fabric").CombinedOutput(); err != nil {
		t.Fatalf("building liqo-fabric: %v\n%s", err, out)
	}
	cfg, err := json.Marshal(map[string]any{"extra": benchGateway(10, 20)})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "fabric.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	base := snapshot(t, ns)
	var logs strings.Builder
	cmd := exec.Command("ip", "netns", "exec", ns, bin, "--config", cfgPath, "--interval", "1s", "--nodename", "gw")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var links []netlink.Link
	for deadline := time.Now().Add(10 * time.Second); len(links) < 10 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		in(t, ns, func() (err error) { links, err = ownLinks(); return err })
	}
	if len(links) != 10 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // the log is read once the agent is gone
		t.Fatalf("the agent made %d links, want 10; its log:\n%s", len(links), logs.String())
	}
	time.Sleep(2 * time.Second)       // a few re-applies
	rss := rssKiB(t, cmd.Process.Pid) // ip netns exec execs the agent: same pid
	t.Logf("agent RSS with 10 nodes of 20 pods: %d KiB", rss)
	if rss > 40<<10 {
		t.Errorf("agent RSS %d KiB is over 40 MiB", rss)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the agent failed on SIGTERM: %v\n%s", err, logs.String())
	}
	if now := snapshot(t, ns); now != base {
		t.Errorf("after the agent's exit the namespace differs:\nbefore:\n%s\nafter:\n%s\nlog:\n%s", base, now, logs.String())
	}
	if log := logs.String(); !strings.Contains(log, "fabric removed") ||
		!strings.Contains(log, `"encap":"vxlan"`) && !strings.Contains(log, `"encap":"geneve"`) {
		t.Errorf("the agent's log does not say its encapsulation and its removal:\n%s", log)
	}
}
