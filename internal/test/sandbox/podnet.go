package sandbox

// The sandbox's pod network, when networking runs. KWOK plays the clusters' kubelets: it gives
// pods addresses from their node's pod CIDR, but nothing answers there. The supervisor plays
// the pods' network: each running pod of a cluster's KWOK nodes gets its address in the
// cluster's stand-in pod network namespace (lqsb-<cluster>-pod), and an HTTP server there
// answers on port 80 of every such address with the pod's name. So an offloaded pod on the
// provider answers a request from the consumer's pod network, through the tunnel, at the
// address the consumer's copy of the pod shows.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/nsping"
)

// podHTTPPort is where the stand-in pods' HTTP server listens, on every pod address.
const podHTTPPort = 80

// podLink is the stand-in pod namespace's link to its gateway host, where pod addresses go.
const podLink = "eth0"

// podAddresses keeps the addresses of one cluster's running KWOK pods on its stand-in pod
// namespace, and answers HTTP for them.
type podAddresses struct {
	cluster string
	cidr    *net.IPNet      // the cluster's pod CIDR
	nodes   map[string]bool // the cluster's KWOK nodes

	mu   sync.Mutex
	pods map[string]string // address -> namespace/name, as set on the namespace
}

// newPodAddresses follows the pods of the named sandbox cluster's KWOK nodes.
func newPodAddresses(cluster string) (*podAddresses, error) {
	o, err := clusterOptions(cluster)
	if err != nil {
		return nil, err
	}
	_, cidr, err := net.ParseCIDR(o.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: pod CIDR %q: %w", cluster, o.PodCIDR, err)
	}
	p := &podAddresses{cluster: cluster, cidr: cidr, nodes: map[string]bool{}, pods: map[string]string{}}
	for _, n := range o.Nodes {
		p.nodes[n.Name] = true
	}
	return p, nil
}

// sync puts the address of every running pod of the cluster's KWOK nodes on the stand-in pod
// namespace and removes the addresses of pods that are gone. Safe on a nil podAddresses.
func (p *podAddresses) sync(ctx context.Context, reader client.Reader) error {
	if p == nil {
		return nil
	}
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods); err != nil {
		return fmt.Errorf("listing Pods: %w", err)
	}
	own := PodAddress(p.cluster)
	want := map[string]string{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		ip := net.ParseIP(pod.Status.PodIP)
		if !p.nodes[pod.Spec.NodeName] || pod.Spec.HostNetwork || pod.Status.Phase != corev1.PodRunning || ip == nil ||
			!p.cidr.Contains(ip) || ip.String() == own {
			continue
		}
		want[ip.String()] = pod.Namespace + "/" + pod.Name
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for ip := range p.pods {
		if _, ok := want[ip]; ok {
			continue
		}
		if err := ipCmd("-n", PodNetns(p.cluster), "addr", "del", ip+"/32", "dev", podLink); err != nil {
			errs = append(errs, fmt.Errorf("removing the address of a gone pod: %w", err))
			continue
		}
		delete(p.pods, ip)
	}
	for ip, name := range want {
		if _, ok := p.pods[ip]; !ok {
			if err := ipCmd("-n", PodNetns(p.cluster), "addr", "add", ip+"/32", "dev", podLink); err != nil {
				errs = append(errs, fmt.Errorf("adding the address of pod %s: %w", name, err))
				continue
			}
		}
		p.pods[ip] = name
	}
	return errors.Join(errs...)
}

// podAt returns the pod holding an address, or "" when none does.
func (p *podAddresses) podAt(ip string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[ip]
}

// ServeHTTP answers for the pod whose address the request reached, naming the caller's
// address: what a pod's web server would say.
func (p *podAddresses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	host, _, _ := net.SplitHostPort(fmt.Sprint(local))
	remote, _, _ := net.SplitHostPort(r.RemoteAddr)
	who := p.podAt(host)
	if who == "" {
		who = "the stand-in pod"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	//nolint:gosec // plain text of names and addresses the sandbox set itself, not HTML
	fmt.Fprintf(w, "pod %s of cluster %s (%s) answers %s\n", who, p.cluster, host, remote)
}

// serve answers HTTP on podHTTPPort of every address of the cluster's stand-in pod namespace
// until the returned server is shut down.
func (p *podAddresses) serve(out io.Writer) (*http.Server, error) {
	ln, err := netns.Listen(netns.Named(PodNetns(p.cluster)), "tcp4", fmt.Sprintf("0.0.0.0:%d", podHTTPPort))
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(out, "pod network of %s: HTTP server: %v\n", p.cluster, err)
		}
	}()
	return srv, nil
}

// PodRequest sends, from the named cluster's stand-in pod, three pings and an HTTP GET to
// address (port 80), and returns what happened in a few lines: the average round trip, and the
// HTTP status and body. It fails when either gets no answer. It needs root and the sandbox's
// network.
func PodRequest(ctx context.Context, from, address string) (string, error) {
	if net.ParseIP(address) == nil {
		return "", fmt.Errorf("%q is not an IP address", address)
	}
	own := PodAddress(from)
	if own == "" {
		return "", fmt.Errorf("unknown sandbox cluster %q (one of %s)", from, strings.Join(ClusterNames, ", "))
	}
	var b strings.Builder
	rtt, err := nsping.Ping(PodNetns(from), address, 3)
	if err != nil {
		return "", fmt.Errorf("ping %s from the pod network of %s (%s): %w", address, from, own, err)
	}
	fmt.Fprintf(&b, "ping %s from %s's pod network (%s): 3 of 3 answered, average round trip %s\n", address, from, own, rtt.Round(time.Microsecond))
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return netns.DialContext(ctx, netns.Named(PodNetns(from)), network, addr)
	}, DisableKeepAlives: true}
	defer transport.CloseIdleConnections()
	url := fmt.Sprintf("http://%s/", net.JoinHostPort(address, fmt.Sprint(podHTTPPort)))
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("building the request: %w", err)
	}
	start := time.Now()
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s from the pod network of %s (%s): %w", url, from, own, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", fmt.Errorf("GET %s from the pod network of %s (%s): reading the answer: %w", url, from, own, err)
	}
	fmt.Fprintf(&b, "GET %s from %s's pod network (%s): %s in %s: %s\n", url, from, own, resp.Status,
		time.Since(start).Round(time.Microsecond), strings.TrimSpace(string(body)))
	if resp.StatusCode != http.StatusOK {
		return b.String(), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return b.String(), nil
}
