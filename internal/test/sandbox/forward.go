package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/peerkit/terraform-provider-liqo/internal/apiproxy"
)

// forwarder carries every connection a listener accepts to a target reached with dial: the
// bridge between the supervisor's network namespace and an isolated cluster's pod namespace
// (isolate.go).
type forwarder struct {
	what string // e.g. "the API server of consumer", for messages
	ln   net.Listener
	dial func(ctx context.Context) (net.Conn, error)
	out  io.Writer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// forward starts carrying ln's connections to dial's target until close.
func forward(what string, ln net.Listener, dial func(ctx context.Context) (net.Conn, error), out io.Writer) *forwarder {
	ctx, cancel := context.WithCancel(context.Background())
	f := &forwarder{what: what, ln: ln, dial: dial, out: out, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f
}

func (f *forwarder) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				fmt.Fprintf(f.out, "forward to %s: %v\n", f.what, err)
			}
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			target, err := f.dial(f.ctx)
			if err != nil {
				_ = c.Close()
				if f.ctx.Err() == nil {
					fmt.Fprintf(f.out, "forward to %s: %v\n", f.what, err)
				}
				return
			}
			if !f.track(c, target) {
				return
			}
			_, _, _ = apiproxy.Pipe(c, target)
			f.untrack(c, target)
		}()
	}
}

// track records a carried connection pair; false (both closed) once the forwarder is closing.
func (f *forwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() != nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *forwarder) untrack(conns ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range conns {
		delete(f.conns, c)
	}
}

// close stops accepting, ends the carried connections and waits for them. Safe on nil.
func (f *forwarder) close() error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	f.cancel()
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	err := f.ln.Close()
	f.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("closing the forward to %s: %w", f.what, err)
	}
	return nil
}
