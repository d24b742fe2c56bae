package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// DialContext connects to addr from inside the node's network namespace, as a process on the
// node would: pod IPs and Service ClusterIPs (through kube-proxy's rules there) are reachable.
// The socket is made on an OS thread switched into the namespace; the connection then works
// from anywhere in the test.
func (n *RealNode) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		conn, err := dialIn(ctx, n.net.path(), network, addr)
		ch <- result{conn, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, fmt.Errorf("real node %s: dialing %s: %w", n.Name, addr, r.err)
	}
	return r.conn, nil
}

// HTTPClient is an HTTP client whose connections start in the node's network namespace (see
// DialContext), without keep-alives, with a 10 s timeout.
func (n *RealNode) HTTPClient() *http.Client {
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{DialContext: n.DialContext, DisableKeepAlives: true},
	}
}

// dialIn dials on the calling goroutine's OS thread after moving it into the network namespace
// at nsPath. The thread goes back to its namespace afterwards; when it cannot, it stays locked
// and the runtime ends it with the goroutine.
func dialIn(ctx context.Context, nsPath, network, addr string) (net.Conn, error) {
	runtime.LockOSThread()
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("opening this thread's network namespace: %w", err)
	}
	defer func() { _ = self.Close() }()
	target, err := os.Open(nsPath)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("opening %s: %w", nsPath, err)
	}
	defer func() { _ = target.Close() }()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("entering %s: %w", nsPath, err)
	}
	var d net.Dialer
	conn, dialErr := d.DialContext(ctx, network, addr)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: it dies with this goroutine instead of serving others
		// from the wrong namespace.
		if conn != nil {
			_ = conn.Close()
		}
		return nil, errors.Join(dialErr, fmt.Errorf("returning from %s: %w", nsPath, err))
	}
	runtime.UnlockOSThread()
	if dialErr != nil {
		return nil, fmt.Errorf("in %s: %w", nsPath, dialErr)
	}
	return conn, nil
}
