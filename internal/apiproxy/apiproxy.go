// Package apiproxy is an HTTP CONNECT proxy that reaches only a fixed set of TCP targets: a
// cluster's API server, for the in-band control plane (upstream Liqo v1.2's liqo-proxy). A peer
// reaches the proxy through the WireGuard tunnel and sends `CONNECT <api-server>`; the proxy
// answers 200 and carries the bytes (TLS, end to end between the client and the API server)
// both ways. Any other target gets 403, any other method 405. The proxy never reads what goes
// through a tunnel (it carries credentials) and logs only who asked for which target.
package apiproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// DialFunc opens a connection to a target (as net.Dialer.DialContext).
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// DefaultDialTimeout bounds the dial of a target when Options.DialTimeout is 0.
const DefaultDialTimeout = 10 * time.Second

// Options configure a Proxy.
type Options struct {
	// Allowed are the targets a CONNECT may reach, as host:port (e.g. the API server's
	// 10.96.0.1:443 or kubernetes.default.svc:443). Hosts are compared as written (case
	// insensitive), never resolved. At least one.
	Allowed []string
	// Dial opens the connections to the targets; nil dials with a net.Dialer.
	Dial DialFunc
	// DialTimeout bounds a dial; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// Log receives a line per tunnel (client, target, outcome, bytes); the zero Logger discards.
	Log logr.Logger
}

// Proxy is an http.Handler that serves CONNECT to its allowed targets. Close ends the tunnels
// it carries.
type Proxy struct {
	allowed     []string // normalized host:port
	dial        DialFunc
	dialTimeout time.Duration
	log         logr.Logger

	mu      sync.Mutex
	closed  bool
	tunnels map[net.Conn]struct{} // the client sides of the open tunnels
}

// New returns a proxy for opts; it fails when a target is not host:port.
func New(opts Options) (*Proxy, error) {
	if len(opts.Allowed) == 0 {
		return nil, errors.New("apiproxy: no allowed target: give the API server's host:port")
	}
	p := &Proxy{dial: opts.Dial, dialTimeout: opts.DialTimeout, log: opts.Log, tunnels: map[net.Conn]struct{}{}}
	for _, target := range opts.Allowed {
		norm, err := normalize(target)
		if err != nil {
			return nil, fmt.Errorf("apiproxy: allowed target %q: %w", target, err)
		}
		p.allowed = append(p.allowed, norm)
	}
	if p.dial == nil {
		var d net.Dialer
		p.dial = d.DialContext
	}
	if p.dialTimeout <= 0 {
		p.dialTimeout = DefaultDialTimeout
	}
	return p, nil
}

// normalize returns target as host:port with a lower-case host, or why it is not host:port.
func normalize(target string) (string, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return "", fmt.Errorf("not host:port: %w", err)
	}
	if host == "" || port == "" {
		return "", errors.New("not host:port: the host or the port is empty")
	}
	return net.JoinHostPort(strings.ToLower(host), port), nil
}

// ServeHTTP tunnels a CONNECT to an allowed target; it refuses other targets (403) and other
// methods (405).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := p.log.WithValues("client", r.RemoteAddr, "target", r.Host)
	if r.Method != http.MethodConnect {
		w.Header().Set("Allow", http.MethodConnect)
		http.Error(w, fmt.Sprintf("this is an HTTP CONNECT proxy to the cluster's API server; method %s is not supported", r.Method),
			http.StatusMethodNotAllowed)
		log.V(1).Info("refused a request that is not CONNECT", "method", r.Method)
		return
	}
	target, err := normalize(r.Host)
	if err != nil {
		http.Error(w, fmt.Sprintf("CONNECT target %q: %v", r.Host, err), http.StatusBadRequest)
		log.Info("refused a CONNECT to a malformed target")
		return
	}
	if !slices.Contains(p.allowed, target) {
		http.Error(w, fmt.Sprintf("CONNECT to %s is not allowed: this proxy only reaches the cluster's API server (%s)",
			target, strings.Join(p.allowed, ", ")), http.StatusForbidden)
		log.Info("refused a CONNECT to a target that is not allowed")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.dialTimeout)
	upstream, err := p.dial(ctx, "tcp", target)
	cancel()
	if err != nil {
		http.Error(w, fmt.Sprintf("reaching %s: %v", target, err), http.StatusBadGateway)
		log.Info("could not reach the target", "error", err.Error())
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = upstream.Close()
		http.Error(w, "this server cannot hijack the connection for a tunnel (HTTP/1.1 only)", http.StatusHTTPVersionNotSupported)
		return
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		_ = upstream.Close()
		log.Info("could not take over the connection", "error", err.Error())
		return
	}
	if !p.track(client) {
		_ = client.Close()
		_ = upstream.Close()
		return
	}
	defer p.untrack(client)
	// Bytes the client sent after its request (e.g. a pipelined TLS ClientHello) are in brw.
	if _, err = brw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n"); err == nil {
		err = brw.Flush()
	}
	if err != nil {
		_ = client.Close()
		_ = upstream.Close()
		log.Info("could not answer the CONNECT", "error", err.Error())
		return
	}
	if n := brw.Reader.Buffered(); n > 0 {
		pending, _ := brw.Peek(n)
		if _, err := upstream.Write(pending); err != nil {
			_ = client.Close()
			_ = upstream.Close()
			log.Info("could not forward the client's first bytes", "error", err.Error())
			return
		}
	}
	start := time.Now()
	up, down, err := Pipe(client, upstream)
	log.V(1).Info("tunnel closed", "sent", up, "received", down, "duration", time.Since(start).Round(time.Millisecond).String(),
		"error", errString(err))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// track records an open tunnel; false when the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.tunnels[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.tunnels, c)
}

// Close ends the open tunnels and refuses new ones.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for c := range p.tunnels {
		_ = c.Close()
	}
}

// Tunnels is how many tunnels are open.
func (p *Proxy) Tunnels() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tunnels)
}

// Serve serves the proxy on ln until ctx ends, then closes ln and every tunnel; it returns
// nil then, or why serving stopped before.
func Serve(ctx context.Context, ln net.Listener, p *Proxy) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		_ = srv.Close()
		p.Close()
	}()
	err := srv.Serve(ln)
	close(stopped)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serving the API-server proxy on %s: %w", ln.Addr(), err)
}

// closeWriter is a connection that can end its sending side alone (TCP, TLS, Unix).
type closeWriter interface{ CloseWrite() error }

// Pipe carries bytes between a and b both ways until both directions end, then closes both.
// When one side stops sending, the other side's sending direction is closed (half-close) so
// that it sees the end; an error in either direction closes both at once. It returns the bytes
// carried from a to b and from b to a, and the first error other than a closed connection.
func Pipe(a, b net.Conn) (aToB, bToA int64, err error) {
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			_ = a.Close()
			_ = b.Close()
		})
	}
	defer closeBoth()
	type result struct {
		n   int64
		err error
	}
	copyDir := func(dst, src net.Conn, out chan<- result) {
		n, err := io.Copy(dst, src)
		if err != nil {
			closeBoth() // a broken direction ends the tunnel
		} else if cw, ok := dst.(closeWriter); ok {
			_ = cw.CloseWrite()
		} else {
			closeBoth()
		}
		out <- result{n, err}
	}
	ab, ba := make(chan result, 1), make(chan result, 1)
	go copyDir(b, a, ab)
	go copyDir(a, b, ba)
	r1, r2 := <-ab, <-ba
	for _, e := range []error{r1.err, r2.err} {
		if e != nil && !errors.Is(e, net.ErrClosed) && err == nil {
			err = fmt.Errorf("carrying bytes: %w", e)
		}
	}
	return r1.n, r2.n, err
}
