// Package fabrictest holds what the fabric's network-namespace tests share (gateway/fabric and
// gateway/fabric/nodeagent): iproute2 in a namespace, running a function in one, and a TCP echo
// of the source address a peer sees.
package fabrictest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/netns"
)

// IPBatch runs iproute2 commands (one a line, without "ip") in network namespace ns ("" for the
// test's own) and fails the test on an error.
func IPBatch(tb testing.TB, ns string, cmds ...string) {
	tb.Helper()
	args := []string{"-batch", "-"}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	c := exec.Command("ip", args...)
	c.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	if out, err := c.CombinedOutput(); err != nil {
		tb.Fatalf("ip %s: %v\n%s\ncommands:\n%s", strings.Join(args, " "), err, out, strings.Join(cmds, "\n"))
	}
}

// IPShow is the output of `ip -n ns args...`; an error fails the test.
func IPShow(tb testing.TB, ns string, args ...string) string {
	tb.Helper()
	b, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		tb.Fatalf("ip %v in %s: %v\n%s", args, ns, err, b)
	}
	return string(b)
}

// In runs fn in network namespace ns and fails the test on its error.
func In(tb testing.TB, ns string, fn func() error) {
	tb.Helper()
	if err := netns.Do(netns.Named(ns), fn); err != nil {
		tb.Fatalf("in network namespace %s: %v", ns, err)
	}
}

// Serve listens on addr (host:port) in ns until the test ends, calling serve for each
// connection (in its own goroutine) and closing it after.
func Serve(tb testing.TB, ns, addr string, serve func(net.Conn)) {
	tb.Helper()
	ln, err := netns.Listen(netns.Named(ns), "tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer func() { _ = c.Close() }(); serve(c) }()
		}
	}()
}

// EchoSource answers each connection to addr in ns with the source address it sees, a line.
func EchoSource(tb testing.TB, ns, addr string) {
	tb.Helper()
	Serve(tb, ns, addr, func(c net.Conn) { _, _ = fmt.Fprintln(c, c.RemoteAddr().(*net.TCPAddr).IP) })
}

// SourceSeen connects from ns to an EchoSource at addr, within timeout, and returns the source
// it saw.
func SourceSeen(ns, addr string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := netns.DialContext(ctx, netns.Named(ns), "tcp", addr)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}
