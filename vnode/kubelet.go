package vnode

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// KubeletEndpoint is where a virtual node's kubelet endpoint (logs, exec) is served: the Node
// advertises IP as its InternalIP and Port as status.daemonEndpoints.kubeletEndpoint.Port, and
// the API server connects there. The runner reserves the port before it registers the Node;
// the reflector serving the endpoint takes the listener with Listen.
type KubeletEndpoint struct {
	// IP is the address the Node advertises.
	IP string
	// Port is the port the Node advertises.
	Port int32

	host string // the address listened on (may be 0.0.0.0 while IP is the pod's)

	mu       sync.Mutex
	reserved net.Listener // taken by the first Listen
}

// reserveEndpoint listens on listen (host:port; port 0 picks a free one, or keeps port when it
// is not 0 and still free) and returns the endpoint that advertises ip (default: listen's host).
func reserveEndpoint(listen, ip string, port int32) (*KubeletEndpoint, error) {
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("kubelet address %q is not host:port: %w", listen, err)
	}
	if ip == "" {
		ip = host
	}
	if parsed := net.ParseIP(ip); parsed == nil || parsed.IsUnspecified() {
		return nil, fmt.Errorf("kubelet address %q: the node needs an IP to advertise (%q is none); set the advertised IP", listen, ip)
	}
	var ln net.Listener
	if p == "0" && port != 0 { // keep the node's port across restarts when it is free
		ln, _ = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", listen); err != nil {
			return nil, fmt.Errorf("listening for the kubelet endpoint on %s: %w", listen, err)
		}
	}
	got := ln.Addr().(*net.TCPAddr).Port
	return &KubeletEndpoint{IP: ip, Port: int32(got), host: host, reserved: ln}, nil //nolint:gosec // a TCP port fits
}

// Listen returns a listener on the endpoint's port: the one reserved when the node started,
// then, when a serving reflector starts again, a new one on the same port.
func (k *KubeletEndpoint) Listen() (net.Listener, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.reserved != nil {
		ln := k.reserved
		k.reserved = nil
		return ln, nil
	}
	addr := net.JoinHostPort(k.host, strconv.Itoa(int(k.Port)))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening again for the kubelet endpoint on %s: %w", addr, err)
	}
	return ln, nil
}

// release closes the reserved listener if nobody took it; nil is fine.
func (k *KubeletEndpoint) release() error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.reserved == nil {
		return nil
	}
	err := k.reserved.Close()
	k.reserved = nil
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("closing the kubelet endpoint's listener: %w", err)
	}
	return nil
}

// advertise sets where node's kubelet endpoint is: its InternalIP and kubelet port.
func advertise(node *corev1.Node, k *KubeletEndpoint) {
	if k == nil {
		return
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: k.IP}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = k.Port
}
