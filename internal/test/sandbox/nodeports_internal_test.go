package sandbox

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The node-port rules cover the NodePort Services of GatewayServers only, each port to its
// target port (or its port when the target is unset), in a stable order.
func TestNodePortRules(t *testing.T) {
	owned := func(kind, apiVersion string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, APIVersion: apiVersion, Name: "x", Controller: ptr.To(true)}}
	}
	svc := func(name string, typ corev1.ServiceType, owners []metav1.OwnerReference, ports ...corev1.ServicePort) corev1.Service {
		return corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
			Spec: corev1.ServiceSpec{Type: typ, Ports: ports}}
	}
	gw := owned("GatewayServer", "networking.liqo.io/v1beta1")
	got := nodePortRules([]corev1.Service{
		svc("b", corev1.ServiceTypeNodePort, gw, corev1.ServicePort{Port: 51840, TargetPort: intstr.FromInt32(51841), NodePort: 30742, Protocol: corev1.ProtocolUDP}),
		svc("a", corev1.ServiceTypeNodePort, gw, corev1.ServicePort{Port: 51900, NodePort: 30001, Protocol: corev1.ProtocolUDP}),
		svc("lb", corev1.ServiceTypeLoadBalancer, gw, corev1.ServicePort{Port: 51840, NodePort: 30002, Protocol: corev1.ProtocolUDP}),
		svc("other", corev1.ServiceTypeNodePort, owned("Deployment", "apps/v1"), corev1.ServicePort{Port: 80, NodePort: 30003}),
		svc("unowned", corev1.ServiceTypeNodePort, nil, corev1.ServicePort{Port: 80, NodePort: 30004}),
		svc("no node port yet", corev1.ServiceTypeNodePort, gw, corev1.ServicePort{Port: 51840, Protocol: corev1.ProtocolUDP}),
	})
	want := []string{
		"-p udp --dport 30001 -j REDIRECT --to-ports 51900",
		"-p udp --dport 30742 -j REDIRECT --to-ports 51841",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules %q, want %q", got, want)
	}
}
