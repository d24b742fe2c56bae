// Package nsdial dials TCP connections from another network namespace. A gateway in process mode
// lives in its gateway host's namespace, while the API server it follows listens in another one
// (e.g. on the host's loopback): its client dials through Dialer.
package nsdial

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Dialer returns a dial function that opens its sockets in the network namespace at nsPath (e.g.
// /proc/<pid>/ns/net or /var/run/netns/<name>). A socket keeps the namespace it was created in,
// so the rest of the process is unaffected.
func Dialer(nsPath string) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	f, err := os.Open(nsPath)
	if err != nil {
		return nil, fmt.Errorf("opening network namespace %s: %w", nsPath, err)
	}
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			// The thread switches namespace and is never unlocked: Go ends it with the goroutine,
			// so no other goroutine ever runs in the other namespace.
			runtime.LockOSThread()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				ch <- result{err: fmt.Errorf("entering network namespace %s: %w", nsPath, err)}
				return
			}
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				err = fmt.Errorf("dialing %s in network namespace %s: %w", addr, nsPath, err)
			}
			ch <- result{c: c, err: err}
		}()
		select {
		case r := <-ch:
			return r.c, r.err
		case <-ctx.Done():
			return nil, fmt.Errorf("dialing %s: %w", addr, ctx.Err())
		}
	}, nil
}
