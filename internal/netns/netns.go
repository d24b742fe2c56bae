// Package netns runs code inside another network namespace without moving the process: a locked
// thread enters the namespace, runs the function and comes back. Sockets opened there stay in
// that namespace, so a process can serve or dial in several namespaces at once (a gateway in
// process mode reaching its API server, the sandbox's stand-in pods, the tunnel tests' pings).
// A namespace is given by its path: /var/run/netns/<name> (Named) or /proc/<pid>/ns/net.
package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Dir holds the named network namespaces (`ip netns add`).
const Dir = "/var/run/netns"

// Named is the path of the network namespace `ip netns add name` made.
func Named(name string) string { return filepath.Join(Dir, name) }

// Do runs fn with its thread in the network namespace at path ns and returns fn's error. If the
// thread cannot come back, it ends with fn's goroutine instead of serving other goroutines.
func Do(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // unlocked only once the thread is back where it started
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- fmt.Errorf("opening this thread's network namespace: %w", err)
			return
		}
		defer func() { _ = self.Close() }()
		target, err := os.Open(ns)
		if err != nil {
			errc <- fmt.Errorf("opening network namespace %s: %w", ns, err)
			return
		}
		defer func() { _ = target.Close() }()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("entering network namespace %s: %w", ns, err)
			return
		}
		err = fn()
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// Listen opens a listener in the network namespace at path ns (network and address as for
// net.Listen).
func Listen(ns, network, address string) (net.Listener, error) {
	var ln net.Listener
	err := Do(ns, func() (err error) {
		if ln, err = net.Listen(network, address); err != nil {
			return fmt.Errorf("listening on %s %s: %w", network, address, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("in network namespace %s: %w", ns, err)
	}
	return ln, nil
}

// Dialer returns a dial function (for http.Transport.DialContext, client-go's rest.Config.Dial)
// that opens its connections from the network namespace at path ns; it fails when ns does not
// exist.
func Dialer(ns string) (func(ctx context.Context, network, address string) (net.Conn, error), error) {
	if _, err := os.Stat(ns); err != nil {
		return nil, fmt.Errorf("network namespace: %w", err)
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		return DialContext(ctx, ns, network, address)
	}, nil
}

// DialContext dials from the network namespace at path ns (network and address as for
// net.Dialer.DialContext).
func DialContext(ctx context.Context, ns, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := Do(ns, func() (err error) {
		var d net.Dialer
		if conn, err = d.DialContext(ctx, network, address); err != nil {
			return fmt.Errorf("dialing %s %s: %w", network, address, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("from network namespace %s: %w", ns, err)
	}
	return conn, nil
}
