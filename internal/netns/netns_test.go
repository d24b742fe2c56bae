package netns_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/netns"
)

// newNamespace makes a network namespace with its loopback up, removed when the test ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2)")
	}
	name := fmt.Sprintf("lqnt-%d", os.Getpid())
	for _, args := range [][]string{{"netns", "add", name}, {"-n", name, "link", "set", "lo", "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return name
}

// A listener opened in a namespace is reached from that namespace only, and the process stays
// in its own namespace throughout.
func TestListenAndDialInANamespace(t *testing.T) {
	ns := newNamespace(t)
	before, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := netns.Listen(netns.Named(ns), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "from "+ns)
			_ = c.Close()
		}
	}()
	addr := ln.Addr().String()

	// Not from here: the loopback of this namespace has no listener on that port.
	if c, err := net.DialTimeout("tcp4", addr, time.Second); err == nil {
		_ = c.Close()
		t.Errorf("dialing %s from the test's own namespace worked; want it refused", addr)
	}
	dial, err := netns.Dialer(netns.Named(ns))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		c, err := dial(context.Background(), "tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c)
		_ = c.Close()
		if err != nil || string(got) != "from "+ns {
			t.Errorf("answer %q, %v; want %q", got, err, "from "+ns)
		}
	}
	after, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Errorf("the process moved from network namespace %s to %s", before, after)
	}
}

// A namespace that does not exist is an error naming it, before and at dial time.
func TestMissingNamespace(t *testing.T) {
	missing := netns.Named("lqnt-missing")
	if _, err := netns.Dialer(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Dialer: %v, want an error naming %s", err, missing)
	}
	err := netns.Do(missing, func() error { t.Error("ran in a missing namespace"); return nil })
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Do: %v, want an error naming %s", err, missing)
	}
	if _, err := netns.Listen(missing, "tcp4", "127.0.0.1:0"); err == nil {
		t.Error("Listen in a missing namespace worked")
	}
}
