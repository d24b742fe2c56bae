package peering

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// TestEndpointCurrent: a GatewayServer's endpoint left from the previous gateway parameters is
// not taken for the new one's (the client would dial the old port).
func TestEndpointCurrent(t *testing.T) {
	lb := func(port int32) Gateway { return Gateway{ServiceType: corev1.ServiceTypeLoadBalancer, Port: port} }
	for _, tc := range []struct {
		name string
		port int32 // the endpoint's
		g    Gateway
		want bool
	}{
		{"LoadBalancer, same port", 51840, lb(51840), true},
		{"LoadBalancer, old port", 51840, lb(51841), false},
		{"LoadBalancer, default port", 51840, lb(0), true},
		{"ClusterIP, old port", 51840, Gateway{ServiceType: corev1.ServiceTypeClusterIP, Port: 51841}, false},
		{"NodePort given", 30051, Gateway{ServiceType: corev1.ServiceTypeNodePort, Port: 51840, NodePort: 30051}, true},
		{"NodePort given, old one", 30050, Gateway{ServiceType: corev1.ServiceTypeNodePort, Port: 51840, NodePort: 30051}, false},
		{"NodePort allocated", 31234, Gateway{ServiceType: corev1.ServiceTypeNodePort, Port: 51840}, true},
		{"NodePort allocated, still the LoadBalancer's", 51840, Gateway{ServiceType: corev1.ServiceTypeNodePort, Port: 51840}, false},
		{"template's type", 31234, Gateway{Port: 51840}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := endpointCurrent(&netv1beta1.EndpointStatus{Addresses: []string{"192.0.2.1"}, Port: tc.port}, tc.g); got != tc.want {
				t.Errorf("endpointCurrent(port %d, %+v) = %t, want %t", tc.port, tc.g, got, tc.want)
			}
		})
	}
}

// TestClientEndpoint: the client dials the server's endpoint, with the address and the port a
// NAT in front of the server needs in their place; the server's status is left as it is.
func TestClientEndpoint(t *testing.T) {
	server := netv1beta1.EndpointStatus{Addresses: []string{"10.0.0.5", "10.0.0.6"}, Port: 51840}
	for _, tc := range []struct {
		name  string
		g     Gateway
		addrs []string
		port  int32
	}{
		{"no override", Gateway{}, []string{"10.0.0.5", "10.0.0.6"}, 51840},
		{"address", Gateway{ClientAddress: "gw.example.com"}, []string{"gw.example.com"}, 51840},
		{"port", Gateway{ClientPort: 41000}, []string{"10.0.0.5", "10.0.0.6"}, 41000},
		{"both", Gateway{ClientAddress: "203.0.113.7", ClientPort: 41000}, []string{"203.0.113.7"}, 41000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := clientEndpoint(server, tc.g)
			if got.Port != tc.port || len(got.Addresses) != len(tc.addrs) || got.Addresses[0] != tc.addrs[0] {
				t.Errorf("clientEndpoint(%+v) = %v:%d, want %v:%d", tc.g, got.Addresses, got.Port, tc.addrs, tc.port)
			}
		})
	}
	if server.Addresses[0] != "10.0.0.5" || server.Port != 51840 {
		t.Errorf("the server's endpoint was changed: %+v", server)
	}
	if (Gateway{}).ServerLocation() != "Provider" || (Gateway{ServerOnConsumer: true}).ServerLocation() != "Consumer" {
		t.Error("ServerLocation does not name the side as liqoctl's --gw-server-service-location does")
	}
}
