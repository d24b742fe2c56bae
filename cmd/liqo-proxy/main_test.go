package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestParse(t *testing.T) {
	inCluster := env(map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"})
	o, err := parse(nil, io.Discard, inCluster)
	if err != nil {
		t.Fatal(err)
	}
	if o.listen != ":8118" || o.probeAddr != ":8081" || !slices.Equal(o.allow, []string{"10.96.0.1:443"}) {
		t.Errorf("defaults in a pod: %+v", o)
	}
	o, err = parse(nil, io.Discard, env(map[string]string{"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}))
	if err != nil || !slices.Equal(o.allow, []string{"[fd00::1]:443"}) {
		t.Errorf("an IPv6 API server: %+v, %v", o, err)
	}
	o, err = parse([]string{"--listen", "127.0.0.1:9000", "--allow", "a.example:6443", "--allow", "192.0.2.1:443",
		"--health-probe-bind-address", "0", "--zap-log-level", "debug"}, io.Discard, inCluster)
	if err != nil {
		t.Fatal(err)
	}
	if o.listen != "127.0.0.1:9000" || o.probeAddr != "0" || !slices.Equal(o.allow, []string{"10.96.0.1:443", "a.example:6443", "192.0.2.1:443"}) {
		t.Errorf("--allow adds to the in-cluster API server and repeats: %+v", o)
	}
	o, err = parse([]string{"--allow", "10.96.0.1:443"}, io.Discard, inCluster)
	if err != nil || !slices.Equal(o.allow, []string{"10.96.0.1:443"}) {
		t.Errorf("--allow of the in-cluster API server: %+v, %v", o, err)
	}
	o, err = parse([]string{"--allow-in-cluster-api-server=false", "--allow", "a.example:6443"}, io.Discard, inCluster)
	if err != nil || !slices.Equal(o.allow, []string{"a.example:6443"}) {
		t.Errorf("--allow-in-cluster-api-server=false: %+v, %v", o, err)
	}
	o, err = parse([]string{"--allow", "a.example:6443"}, io.Discard, env(nil))
	if err != nil || !slices.Equal(o.allow, []string{"a.example:6443"}) {
		t.Errorf("--allow outside a pod: %+v, %v", o, err)
	}
	for _, args := range [][]string{nil, {"--allow-in-cluster-api-server=false"}} {
		vars := env(nil)
		if len(args) > 0 {
			vars = inCluster
		}
		if _, err := parse(args, io.Discard, vars); err == nil || !strings.Contains(err.Error(), "--allow") ||
			!strings.Contains(err.Error(), "KUBERNETES_SERVICE_HOST") {
			t.Errorf("no target (%v): %v, want an error naming --allow and $KUBERNETES_SERVICE_HOST", args, err)
		}
	}
	if _, err := parse([]string{"stray"}, io.Discard, inCluster); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("a stray argument: %v", err)
	}
	if err := run(t.Context(), []string{"--allow", "no-port", "--listen", "127.0.0.1:0"}, io.Discard, nil); err == nil ||
		!strings.Contains(err.Error(), "--allow") || !strings.Contains(err.Error(), "no-port") {
		t.Errorf("an --allow that is not host:port: %v", err)
	}
}

// echoServer serves a TCP echo on a free local port and returns its address.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// connect sends CONNECT target to the proxy at addr and returns the status line's code and the
// connection (with its reader).
func connect(t *testing.T, addr, target string) (int, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // none after a 200: the tunnel's bytes follow in br
	return resp.StatusCode, c, br
}

// TestRunServes: run serves CONNECT to an allowed target (a TCP echo: bytes go both ways), refuses
// another (403), answers its health endpoints, and stops when its context ends.
func TestRunServes(t *testing.T) {
	allowed, other := echoServer(t), echoServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	logs := &testenv.SyncBuffer{}
	ready := make(chan listening, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0", "--allow", allowed},
			logs, func(l listening) { ready <- l })
	}()
	var addrs listening
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("run ended before serving: %v\n%s", err, logs)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not start serving in 10s")
	}

	code, c, br := connect(t, addrs.proxy.String(), allowed)
	if code != http.StatusOK {
		t.Fatalf("CONNECT %s (allowed): %d", allowed, code)
	}
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
		t.Errorf("through the tunnel: %q, %v; want the echo of ping", line, err)
	}
	if code, _, _ := connect(t, addrs.proxy.String(), other); code != http.StatusForbidden {
		t.Errorf("CONNECT %s (not allowed): %d, want 403", other, code)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addrs.health.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop in 10s after its context ended")
	}
	// The open tunnel ended with the proxy.
	if _, err := br.ReadString('\n'); err == nil {
		t.Error("the tunnel is still open after the proxy stopped")
	}
	if out := logs.String(); !strings.Contains(out, "refused a CONNECT to a target that is not allowed") || !strings.Contains(out, "stopped") {
		t.Errorf("logs lack the refusal or the stop:\n%s", out)
	}
}
