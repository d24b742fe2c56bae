package agent

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// TestParseKey: a key is accepted raw (32 bytes) or as base64 text; another length means the
// Secret is not filled yet (waiting), bad base64 of the right length is an error.
func TestParseKey(t *testing.T) {
	k := newKey(t)
	for name, in := range map[string][]byte{"raw": k[:], "base64": []byte(k.String())} {
		got, err := parseKey(in)
		if err != nil || got != k {
			t.Errorf("%s: parseKey = %s, %v; want %s", name, got, err, k)
		}
	}
	for _, n := range []int{0, 31, 33} {
		if _, err := parseKey(make([]byte, n)); !errors.Is(err, errWaiting) || !strings.Contains(err.Error(), "got "+strconv.Itoa(n)) {
			t.Errorf("parseKey(%d bytes) error = %v, want a waiting one naming the length", n, err)
		}
	}
	bad := []byte(strings.Repeat("!", 44))
	if _, err := parseKey(bad); err == nil || errors.Is(err, errWaiting) {
		t.Errorf("parseKey(44 bytes of bad base64) error = %v, want a real error", err)
	}
}

// TestFirstPort: port, else the first of ports, else the default.
func TestFirstPort(t *testing.T) {
	for _, c := range []struct {
		port  int32
		ports []int32
		want  int
	}{
		{51000, []int32{52000}, 51000},
		{0, []int32{52000, 53000}, 52000},
		{0, nil, 7},
	} {
		if got := firstPort(c.port, c.ports, 7); got != c.want {
			t.Errorf("firstPort(%d, %v, 7) = %d, want %d", c.port, c.ports, got, c.want)
		}
	}
}

// TestResolveEndpoint: the first address that resolves to IPv4 wins, with the port or the
// first of the ports; a missing address or port means waiting; TCP, names without an IPv4
// address and names that do not resolve are errors.
func TestResolveEndpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	for _, c := range []struct {
		name string
		ep   netv1beta1.EndpointStatus
		want string
	}{
		{"address", netv1beta1.EndpointStatus{Addresses: []string{"192.0.2.7"}, Port: 51840, Protocol: &udp}, "192.0.2.7:51840"},
		{"no protocol", netv1beta1.EndpointStatus{Addresses: []string{"192.0.2.7"}, Port: 51840}, "192.0.2.7:51840"},
		{"ports", netv1beta1.EndpointStatus{Addresses: []string{"192.0.2.7"}, Ports: []int32{40001, 40002}}, "192.0.2.7:40001"},
		{"host name", netv1beta1.EndpointStatus{Addresses: []string{"localhost"}, Port: 1}, "127.0.0.1:1"},
		{"first that resolves", netv1beta1.EndpointStatus{Addresses: []string{"bad..name", "::1", "192.0.2.8"}, Port: 2}, "192.0.2.8:2"},
	} {
		got, err := resolveEndpoint(ctx, c.ep)
		if err != nil || got.String() != c.want {
			t.Errorf("%s: resolveEndpoint = %v, %v; want %s", c.name, got, err, c.want)
		}
	}
	for _, c := range []struct {
		name    string
		ep      netv1beta1.EndpointStatus
		want    string
		waiting bool
	}{
		{"TCP", netv1beta1.EndpointStatus{Addresses: []string{"192.0.2.7"}, Port: 1, Protocol: &tcp}, "WireGuard runs on UDP only", false},
		{"no address", netv1beta1.EndpointStatus{Port: 1}, "endpoint address and port", true},
		{"no port", netv1beta1.EndpointStatus{Addresses: []string{"192.0.2.7"}}, "endpoint address and port", true},
		{"IPv6 only", netv1beta1.EndpointStatus{Addresses: []string{"::1"}, Port: 3}, "::1 has no IPv4 address", false},
		{"unresolvable", netv1beta1.EndpointStatus{Addresses: []string{"bad..name"}, Port: 3}, "resolving endpoint [bad..name] port 3", false},
	} {
		got, err := resolveEndpoint(ctx, c.ep)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, errWaiting) != c.waiting {
			t.Errorf("%s: resolveEndpoint = %v, %v; want an error containing %q (waiting: %t)", c.name, got, err, c.want, c.waiting)
		}
	}
}

// TestRemoteNetworks: the remote pod then external CIDRs, paired with how the local cluster
// sees them; none declared means waiting, a bad CIDR is an error.
func TestRemoteNetworks(t *testing.T) {
	c := configuration("ns", "conf", "10.1.0.0/16", "10.2.0.0/16")
	c.Spec.Remote.CIDR.External = []netv1beta1.CIDR{"10.3.0.0/16"}
	c.Status.Remote = &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{"10.71.0.0/16"}}}
	got, err := remoteNetworks(c)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"10.1.0.0/16", "10.71.0.0/16"}, {"10.2.0.0/16", "10.2.0.0/16"}, {"10.3.0.0/16", "10.3.0.0/16"}}
	if len(got) != len(want) {
		t.Fatalf("remoteNetworks = %v, want %v", got, want)
	}
	for i, w := range want {
		if got[i].Real.String() != w[0] || got[i].Mapped.String() != w[1] {
			t.Errorf("network %d: %s seen as %s, want %s seen as %s", i, &got[i].Real, &got[i].Mapped, w[0], w[1])
		}
	}
	empty := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}
	if _, err := remoteNetworks(empty); !errors.Is(err, errWaiting) || !strings.Contains(err.Error(), "Configuration empty") {
		t.Errorf("remoteNetworks of an empty Configuration: error %v, want a waiting one naming it", err)
	}
	if _, err := remoteNetworks(configuration("ns", "bad", "10.1.0.0/33")); err == nil || errors.Is(err, errWaiting) ||
		!strings.Contains(err.Error(), "reading the remote networks") {
		t.Errorf("remoteNetworks with a bad CIDR: error %v, want a real one", err)
	}
}
