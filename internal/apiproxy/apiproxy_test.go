package apiproxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/peerkit/terraform-provider-liqo/internal/apiproxy"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// startProxy serves a proxy allowing targets on a loopback listener until the test ends, and
// returns its address and how many times it dialled.
func startProxy(t *testing.T, allowed ...string) (string, *atomic.Int32, *apiproxy.Proxy) {
	t.Helper()
	dials := &atomic.Int32{}
	var d net.Dialer
	p, err := apiproxy.New(apiproxy.Options{Allowed: allowed, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, address)
	}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- apiproxy.Serve(ctx, ln, p) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String(), dials, p
}

// echoServer answers every connection by echoing upper-cased lines, then closes its side
// when the client closes its own; it returns its address.
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
			go func() {
				defer func() { _ = c.Close() }()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := fmt.Fprintln(c, strings.ToUpper(sc.Text())); err != nil {
						return
					}
				}
				_, _ = fmt.Fprintln(c, "BYE") // after the client's half-close
			}()
		}
	}()
	return ln.Addr().String()
}

// connect sends CONNECT target to the proxy and returns the connection and the answer's
// status line.
func connect(t *testing.T, proxy, target, extra string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n%s", target, target, extra); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	status, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the proxy's answer: %v", err)
	}
	return c, br, strings.TrimSpace(status)
}

// TestConnectCarriesBytes: a CONNECT to the allowed target answers 200 and carries bytes both
// ways, including bytes sent right behind the request; when the client stops sending, the
// target sees the end and its last words still come back; then the tunnel is gone.
func TestConnectCarriesBytes(t *testing.T) {
	target := echoServer(t)
	proxy, dials, p := startProxy(t, target)
	c, br, status := connect(t, proxy, target, "pipelined\n")
	if status != "HTTP/1.1 200 Connection established" {
		t.Fatalf("CONNECT %s: %q, want 200", target, status)
	}
	// Skip the blank line ending the answer.
	if line, _ := br.ReadString('\n'); line != "\r\n" {
		t.Fatalf("after the status line: %q", line)
	}
	if _, err := fmt.Fprintln(c, "hello"); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("reading through the tunnel: %v", err)
	}
	if got, want := string(rest), "PIPELINED\nHELLO\nBYE\n"; got != want {
		t.Errorf("through the tunnel: %q, want %q", got, want)
	}
	if dials.Load() != 1 {
		t.Errorf("the proxy dialled %d times through its dial function, want 1", dials.Load())
	}
	testenv.EventuallyOK(t, "the tunnel closes", 5*time.Second, func() error {
		if n := p.Tunnels(); n != 0 {
			return fmt.Errorf("%d tunnels open after both sides ended", n)
		}
		return nil
	})
}

// TestRefusals: a CONNECT to another target gets 403 naming the target and saying what the
// proxy reaches, and dials nothing; other methods get 405; a malformed target 400.
func TestRefusals(t *testing.T) {
	allowed := echoServer(t)
	other := echoServer(t)
	proxy, dials, _ := startProxy(t, allowed)

	_, br, status := connect(t, proxy, other, "")
	if !strings.Contains(status, " 403 ") {
		t.Errorf("CONNECT %s (not allowed): %q, want 403", other, status)
	}
	resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader(status+"\r\n"), br)), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if want := "CONNECT to " + other + " is not allowed: this proxy only reaches the cluster's API server (" + allowed + ")"; !strings.Contains(string(body), want) {
		t.Errorf("refusal says %q, want %q", body, want)
	}
	if _, _, status := connect(t, proxy, "localhost", ""); !strings.Contains(status, " 400 ") {
		t.Errorf("CONNECT localhost (no port): %q, want 400", status)
	}
	if dials.Load() != 0 {
		t.Errorf("the proxy dialled %d times for refused targets", dials.Load())
	}

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequestWithContext(t.Context(), method, "http://"+proxy+"/", strings.NewReader("secret"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodConnect ||
			!strings.Contains(string(body), "HTTP CONNECT proxy") {
			t.Errorf("%s: %s, Allow %q, %q; want 405 saying it is a CONNECT proxy", method, resp.Status, resp.Header.Get("Allow"), body)
		}
	}
	// A proxied GET (absolute URL, what an HTTP client sends for http:// through a proxy) is
	// refused too: the proxy is no forward proxy for plain HTTP.
	viaProxy := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: proxy})}}
	resp, err = viaProxy.Get("http://" + allowed + "/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("plain GET through the proxy to the allowed target: %s, want 405", resp.Status)
	}
}

// TestNewValidates: targets must be host:port.
func TestNewValidates(t *testing.T) {
	for _, allowed := range [][]string{nil, {"10.0.0.1"}, {":443"}, {"https://10.0.0.1:443"}} {
		if _, err := apiproxy.New(apiproxy.Options{Allowed: allowed}); err == nil {
			t.Errorf("New(%q): no error", allowed)
		}
	}
}

// TestClientGoThroughProxy: client-go reaches a real kube-apiserver over TLS through the proxy
// (rest.Config's Proxy), as a peer's identity kubeconfig with proxy-url does; with a proxy
// that allows another target, the same client fails with the proxy's refusal.
func TestClientGoThroughProxy(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "proxied"})
	cfg := env.Cluster("proxied").Config
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy, dials, _ := startProxy(t, u.Host)

	via := func(proxy string) *kubernetes.Clientset {
		c := rest.CopyConfig(cfg)
		c.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: proxy})
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	cs := via(proxy)
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version through the proxy: %v", err)
	}
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context())
	if err != nil || string(body) != "ok" {
		t.Fatalf("/readyz through the proxy: %q, %v", body, err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("reading namespace default through the proxy: %v", err)
	}
	if dials.Load() == 0 {
		t.Fatalf("the client reached the API server (%s) without the proxy", v.GitVersion)
	}

	elsewhere, _, _ := startProxy(t, "127.0.0.1:1")
	if _, err := via(elsewhere).Discovery().ServerVersion(); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("through a proxy that does not allow the API server: %v, want the proxy's 403", err)
	}
}
