package provider_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// TestAccGatewayServerPortInUse: with another peering's GatewayServer on the default UDP port
// and a Service on node port 30999 in the cluster, a liqo_gateway_server on that port, or on
// that node port, is refused at plan, naming the other object and the fix; on free ports it
// plans. When the controllers refuse to run its gateway (the port conflict they record on the
// GatewayServer), wait_for_endpoint fails at once with their reason instead of waiting.
func TestAccGatewayServerPortInUse(t *testing.T) {
	const ns, otherNS = "nw-gwport", "nw-gwport-other"
	nwTestNamespace(t, "provider", ns)
	nwTestNamespace(t, "provider", otherNS)
	ctx := context.Background()
	c := cluster("provider").Client
	other := &networkingv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: "other",
		Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-other"}},
		Spec: networkingv1beta1.GatewayServerSpec{Endpoint: networkingv1beta1.Endpoint{Port: consts.DefaultGatewayPort}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: "np"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30999, Protocol: corev1.ProtocolUDP}}}}
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the package's other tests use these ports
		_ = c.Delete(context.Background(), other)
		_ = c.Delete(context.Background(), svc)
	})
	// The controllers' answer to a GatewayServer on a taken port (what they write: the annotation).
	refuse := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		go func() {
			_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				gs, err := getGatewayServer(ns, "server")
				if err != nil {
					return false, nil
				}
				gs.Annotations = map[string]string{consts.PortConflictAnnotation: "UDP port 51842 is taken: GatewayServer nw-gwport-other/late " +
					"(the tunnel to cluster cl-late) listens on it already"}
				return c.Update(ctx, gs) == nil, nil
			})
		}()
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config: gatewayServerConfig(ns, "server", ""), PlanOnly: true,
				ExpectError: offWrappedText(`Gateway port in use`, `GatewayServer nw-gwport/server on cluster "provider"`,
					`UDP port 51840 is taken: GatewayServer nw-gwport-other/other (the tunnel to cluster cl-other) listens on it already`,
					`port 51841 is free. Set port = 51841`),
			},
			{
				Config: gatewayServerConfig(ns, "server", "port = 51841\n  service_type = \"NodePort\"\n  node_port = 30999"), PlanOnly: true,
				ExpectError: offWrappedText(`Gateway port in use`, `node port 30999 is allocated to Service nw-gwport-other/np already`,
					`Set node_port to a node port no Service of the cluster has`),
			},
			{Config: gatewayServerConfig(ns, "server", "port = 51841\n  service_type = \"NodePort\"\n  node_port = 30998"), PlanOnly: true,
				ExpectNonEmptyPlan: true},
			{
				PreConfig:   refuse,
				Config:      gatewayServerConfig(ns, "server", "port = 51842\n  wait_for_endpoint = true\n  timeouts {\n    create = \"30s\"\n  }"),
				ExpectError: offWrappedText(`the liqo controllers do not run its gateway: UDP port 51842 is taken`, `Set port to a port`),
			},
		},
	})
}
