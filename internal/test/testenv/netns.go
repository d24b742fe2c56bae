package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"testing"
)

// RequireNetAdmin skips tb unless it can make network namespaces and TUN devices: it runs as
// root, /dev/net/tun exists and ip (iproute2) is on PATH. The skip message says what is missing.
func RequireNetAdmin(tb testing.TB) {
	tb.Helper()
	requireNetns(tb)
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		tb.Skipf("needs /dev/net/tun to create TUN devices: %v", err)
	}
}

// NewNetns makes a network namespace for tb with its loopback up, and deletes it when tb ends.
// Its name is prefix followed by 6 random hex digits; netns.Named gives its path. It skips tb
// unless it runs as root with ip (iproute2) on PATH.
func NewNetns(tb testing.TB, prefix string) string {
	tb.Helper()
	requireNetns(tb)
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		tb.Fatalf("naming a network namespace: %v", err)
	}
	name := prefix + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		tb.Fatalf("ip netns add %s: %v\n%s", name, err, out)
	}
	tb.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			tb.Errorf("ip netns del %s: %v\n%s", name, err, out)
		}
	})
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		tb.Fatalf("setting lo up in network namespace %s: %v\n%s", name, err, out)
	}
	return name
}

// requireNetns skips tb unless it runs as root with ip (iproute2) on PATH.
func requireNetns(tb testing.TB) {
	tb.Helper()
	RequireLong(tb, "makes network namespaces")
	if os.Geteuid() != 0 {
		tb.Skip("needs root: creates network namespaces, links and nftables rules")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skip("needs ip (iproute2) on PATH")
	}
}
