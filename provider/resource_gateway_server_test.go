package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

func gatewayServerConfig(namespace, name, body string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_gateway_server" "gw" {
  cluster           = "provider"
  namespace         = %q
  name              = %q
  remote_cluster_id = "cl-consumer"
  secret_ref        = "gw-keys"
  %s
}
`, namespace, name, body)
}

func gsObj(ns, name string) *networkingv1beta1.GatewayServer {
	return &networkingv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func getGatewayServer(ns, name string) (*networkingv1beta1.GatewayServer, error) {
	gs := &networkingv1beta1.GatewayServer{}
	err := cluster("provider").Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, gs)
	return gs, err
}

// fakeGatewayServerController stands in for the liqo gateway controller, which the test clusters
// do not run: in the background, once the GatewayServer exists and ready(gs) holds, it writes the
// endpoint into the status subresource, as the controller would after exposing the server.
func fakeGatewayServerController(t *testing.T, ns, name string, ready func(*networkingv1beta1.GatewayServer) bool, ep networkingv1beta1.EndpointStatus) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			gs, err := getGatewayServer(ns, name)
			if err != nil || !ready(gs) {
				return false, nil
			}
			gs.Status.Endpoint = ep.DeepCopy()
			return cluster("provider").Client.Status().Update(ctx, gs) == nil, nil
		})
	}()
}

func checkGatewayServerSpec(ns, name string, check func(*networkingv1beta1.GatewayServer) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		gs, err := getGatewayServer(ns, name)
		if err != nil {
			return fmt.Errorf("GatewayServer %s/%s: %w", ns, name, err)
		}
		if gs.Labels["liqo.io/remote-cluster-id"] != "cl-consumer" {
			return fmt.Errorf("GatewayServer labels %v", gs.Labels)
		}
		return check(gs)
	}
}

func TestAccGatewayServer(t *testing.T) {
	const (
		addr = "liqo_gateway_server.gw"
		ns   = "nw-gwserver"
	)
	nwTestNamespace(t, "provider", ns)
	udp := corev1.ProtocolUDP
	lbEndpoint := networkingv1beta1.EndpointStatus{Addresses: []string{"203.0.113.10"}, Port: 51840, Protocol: &udp}
	npEndpoint := networkingv1beta1.EndpointStatus{Addresses: []string{"172.18.0.3"}, Port: 30742, Protocol: &udp}
	isLB := func(gs *networkingv1beta1.GatewayServer) bool {
		return gs.Spec.Endpoint.ServiceType == corev1.ServiceTypeLoadBalancer
	}
	always := func(*networkingv1beta1.GatewayServer) bool { return true }

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             nwCheckGone("provider", gsObj(ns, "server"), gsObj(ns, "server-2")),
		Steps: []resource.TestStep{
			{
				// Seed 003's GatewayServer; no controller reports an endpoint and nothing waits.
				Config: gatewayServerConfig(ns, "server", `mtu = 1340
  node_port = 30742`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("endpoint_port")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("provider/nw-gwserver/server")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("port"), knownvalue.Int64Exact(51840)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("service_type"), knownvalue.StringExact("NodePort")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("server_template"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"kind": knownvalue.StringExact("WgGatewayServerTemplate"), "name": knownvalue.StringExact("wireguard-server"),
						"namespace": knownvalue.StringExact("liqo"),
					})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint_addresses"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint_port"), knownvalue.Null()),
				},
				Check: checkGatewayServerSpec(ns, "server", func(gs *networkingv1beta1.GatewayServer) error {
					want := networkingv1beta1.GatewayServerSpec{
						MTU: 1340,
						Endpoint: networkingv1beta1.Endpoint{
							Port: 51840, ServiceType: corev1.ServiceTypeNodePort, NodePort: ptr.To(int32(30742)),
						},
						SecretRef: corev1.LocalObjectReference{Name: "gw-keys"},
						ServerTemplateRef: corev1.ObjectReference{
							APIVersion: "networking.liqo.io/v1beta1", Kind: "WgGatewayServerTemplate", Name: "wireguard-server", Namespace: "liqo",
						},
					}
					if !equality.Semantic.DeepEqual(gs.Spec, want) {
						return fmt.Errorf("spec %+v, want %+v", gs.Spec, want)
					}
					return nil
				}),
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     "provider/nw-gwserver/server",
				ImportStateVerify: true,
			},
			{
				// In place, to a LoadBalancer with a fixed IP, waiting for the endpoint that the test's
				// stand-in controller reports.
				PreConfig: func() { fakeGatewayServerController(t, ns, "server", isLB, lbEndpoint) },
				Config: gatewayServerConfig(ns, "server", `mtu = 1340
  service_type = "LoadBalancer"
  load_balancer_ip = "203.0.113.10"
  wait_for_endpoint = true`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("endpoint_addresses")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint_addresses"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("203.0.113.10")})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint_port"), knownvalue.Int64Exact(51840)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint_protocol"), knownvalue.StringExact("UDP")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("node_port"), knownvalue.Null()),
				},
				Check: checkGatewayServerSpec(ns, "server", func(gs *networkingv1beta1.GatewayServer) error {
					ep := gs.Spec.Endpoint
					if ep.ServiceType != corev1.ServiceTypeLoadBalancer || ep.NodePort != nil || ep.LoadBalancerIP == nil || *ep.LoadBalancerIP != "203.0.113.10" {
						return fmt.Errorf("spec.endpoint %+v", ep)
					}
					return nil
				}),
			},
			{
				// Only the MTU changes: the reported endpoint stays in the plan, known.
				Config: gatewayServerConfig(ns, "server", `mtu = 1420
  service_type = "LoadBalancer"
  load_balancer_ip = "203.0.113.10"
  wait_for_endpoint = true`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint_port"), knownvalue.Int64Exact(51840)),
				}},
				Check: checkGatewayServerSpec(ns, "server", func(gs *networkingv1beta1.GatewayServer) error {
					if gs.Spec.MTU != 1420 {
						return fmt.Errorf("mtu %d", gs.Spec.MTU)
					}
					return nil
				}),
			},
			{
				// A new name is a new object; its creation waits for the endpoint.
				PreConfig: func() { fakeGatewayServerController(t, ns, "server-2", always, npEndpoint) },
				Config: gatewayServerConfig(ns, "server-2", `node_port = 30742
  wait_for_endpoint = true`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint_addresses"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("172.18.0.3")})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint_port"), knownvalue.Int64Exact(30742)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("mtu"), knownvalue.Null()),
				},
				Check: resource.ComposeTestCheckFunc(
					nwCheckGone("provider", gsObj(ns, "server")),
					checkGatewayServerSpec(ns, "server-2", func(gs *networkingv1beta1.GatewayServer) error {
						if gs.Spec.MTU != 0 {
							return fmt.Errorf("mtu %d, want it left out", gs.Spec.MTU)
						}
						return nil
					}),
				),
			},
			{
				// Deleted out of band: re-created (without waiting this time).
				PreConfig: func() { nwDeleteOutOfBand(t, "provider", gsObj(ns, "server-2")) },
				Config:    gatewayServerConfig(ns, "server-2", `node_port = 30742`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: checkGatewayServerSpec(ns, "server-2", func(*networkingv1beta1.GatewayServer) error { return nil }),
			},
		},
	})
}

// TestAccGatewayServerWaitTimeout: nothing reports the endpoint; the wait times out with an error
// naming the module, the object, the cluster and the last status seen, and the object stays
// managed (it is destroyed at the end of the test).
func TestAccGatewayServerWaitTimeout(t *testing.T) {
	const ns = "nw-gwserver-timeout"
	nwTestNamespace(t, "provider", ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             nwCheckGone("provider", gsObj(ns, "server")),
		Steps: []resource.TestStep{
			{
				Config: gatewayServerConfig(ns, "server", `wait_for_endpoint = true
  timeouts {
    create = "2s"
  }`),
				ExpectError: regexp.MustCompile(`(?s)liqo_gateway_server: GatewayServer nw-gwserver-timeout/server in cluster\s+"provider".*waited 2s.*last seen: no status.endpoint`),
			},
			{
				// The object was saved before the wait: it is in the state, tainted, so it is replaced.
				Config: gatewayServerConfig(ns, "server", ``),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("liqo_gateway_server.gw", plancheck.ResourceActionReplace),
				}},
			},
			{
				// A fixed node port: an endpoint with another port (as reported before the change)
				// does not end the wait.
				PreConfig: func() {
					udp := corev1.ProtocolUDP
					fakeGatewayServerController(t, ns, "server", func(*networkingv1beta1.GatewayServer) bool { return true },
						networkingv1beta1.EndpointStatus{Addresses: []string{"172.18.0.3"}, Port: 31999, Protocol: &udp})
				},
				Config: gatewayServerConfig(ns, "server", `node_port = 30742
  wait_for_endpoint = true
  timeouts {
    update = "3s"
  }`),
				ExpectError: regexp.MustCompile(`(?s)waited 3s.*port 31999.*not yet the node\s+port\s+30742`),
			},
		},
	})
}

func TestAccGatewayServerValidation(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config:      gatewayServerConfig("nw-bad", "server", `service_type = "ClusterIP"`+"\n"+`node_port = 30742`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`a ClusterIP Service has no node port`),
			},
			{
				Config:      gatewayServerConfig("nw-bad", "server", `load_balancer_ip = "203.0.113.10"`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`service_type is NodePort, which has no load balancer`),
			},
			{
				Config:      gatewayServerConfig("nw-bad", "server", `service_type = "ExternalName"`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)service_type.*value must be one of`),
			},
			{
				Config:      gatewayServerConfig("nw-bad", "server", `port = 70000`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)port.*must be between 1 and 65535`),
			},
		},
	})
}
