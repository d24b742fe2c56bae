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
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

func networkConfigurationConfig(namespace, remoteID, body string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_network_configuration" "peer" {
  cluster           = "consumer"
  namespace         = %q
  remote_cluster_id = %q
  %s
}
`, namespace, remoteID, body)
}

func confObj(ns, name string) *networkingv1beta1.Configuration {
	return &networkingv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func getConfiguration(ns, name string) (*networkingv1beta1.Configuration, error) {
	conf := &networkingv1beta1.Configuration{}
	err := cluster("consumer").Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, conf)
	return conf, err
}

// fakeNetworkController stands in for the liqo network controller, which the test clusters do
// not run: in the background, once the Configuration exists and its spec lists wantPod first, it
// writes the remapped CIDRs into the status subresource, as the controller would.
func fakeNetworkController(t *testing.T, ns, name, wantPod string, remapped networkingv1beta1.ClusterConfigCIDR) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			conf, err := getConfiguration(ns, name)
			if err != nil || len(conf.Spec.Remote.CIDR.Pod) == 0 || string(conf.Spec.Remote.CIDR.Pod[0]) != wantPod {
				return false, nil
			}
			conf.Status.Remote = &networkingv1beta1.ClusterConfig{CIDR: *remapped.DeepCopy()}
			return cluster("consumer").Client.Status().Update(ctx, conf) == nil, nil
		})
	}()
}

func checkConfiguration(ns, name, remoteID string, want networkingv1beta1.ClusterConfigCIDR) resource.TestCheckFunc {
	return func(*terraform.State) error {
		conf, err := getConfiguration(ns, name)
		if err != nil {
			return fmt.Errorf("Configuration %s/%s: %w", ns, name, err)
		}
		if conf.Labels["liqo.io/remote-cluster-id"] != remoteID {
			return fmt.Errorf("Configuration labels %v, want liqo.io/remote-cluster-id=%s", conf.Labels, remoteID)
		}
		if !equality.Semantic.DeepEqual(conf.Spec.Remote.CIDR, want) || conf.Spec.Local != nil {
			return fmt.Errorf("Configuration spec %+v, want remote CIDRs %+v", conf.Spec, want)
		}
		return nil
	}
}

func cidrs(s ...string) []networkingv1beta1.CIDR {
	out := []networkingv1beta1.CIDR{}
	for _, c := range s {
		out = append(out, networkingv1beta1.CIDR(c))
	}
	return out
}

func stringsExact(s ...string) knownvalue.Check {
	checks := []knownvalue.Check{}
	for _, v := range s {
		checks = append(checks, knownvalue.StringExact(v))
	}
	return knownvalue.ListExact(checks)
}

func TestAccNetworkConfiguration(t *testing.T) {
	const (
		addr = "liqo_network_configuration.peer"
		ns   = "nw-netconf"
	)
	nwTestNamespace(t, "consumer", ns)
	seed := `remote_pod_cidrs = ["10.243.0.0/16"]
  remote_external_cidrs = ["10.70.0.0/16"]`
	changed := `remote_pod_cidrs = ["10.244.0.0/16", "10.245.0.0/16"]
  wait_for_remap = true`
	remapped := networkingv1beta1.ClusterConfigCIDR{Pod: cidrs("10.81.0.0/16", "10.83.0.0/16")}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             nwCheckGone("consumer", confObj(ns, "cl-provider"), confObj(ns, "cl-provider-2")),
		Steps: []resource.TestStep{
			{
				// Seed 003's Configuration; nothing reports a remapping and nothing waits.
				Config: networkConfigurationConfig(ns, "cl-provider", seed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("name"), knownvalue.StringExact("cl-provider")),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("remapped_pod_cidrs")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("consumer/nw-netconf/cl-provider")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("remote_pod_cidrs"), stringsExact("10.243.0.0/16")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("remapped_pod_cidrs"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("remapped_external_cidrs"), knownvalue.Null()),
				},
				Check: checkConfiguration(ns, "cl-provider", "cl-provider",
					networkingv1beta1.ClusterConfigCIDR{Pod: cidrs("10.243.0.0/16"), External: cidrs("10.70.0.0/16")}),
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     "consumer/nw-netconf/cl-provider",
				ImportStateVerify: true,
			},
			{
				// The CIDRs change in place; the apply waits for the remapping, which the test's
				// stand-in controller reports.
				PreConfig: func() { fakeNetworkController(t, ns, "cl-provider", "10.244.0.0/16", remapped) },
				Config:    networkConfigurationConfig(ns, "cl-provider", changed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("remapped_pod_cidrs")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("remapped_pod_cidrs"), stringsExact("10.81.0.0/16", "10.83.0.0/16")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("remapped_external_cidrs"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("remote_external_cidrs"), knownvalue.Null()),
				},
				Check: checkConfiguration(ns, "cl-provider", "cl-provider",
					networkingv1beta1.ClusterConfigCIDR{Pod: cidrs("10.244.0.0/16", "10.245.0.0/16")}),
			},
			{
				// Only the timeouts change: the reported remapping stays known in the plan.
				Config: networkConfigurationConfig(ns, "cl-provider", changed+"\n  timeouts {\n    update = \"1m\"\n  }"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("remapped_pod_cidrs"), stringsExact("10.81.0.0/16", "10.83.0.0/16")),
				}},
			},
			{
				// Another peer is another Configuration (named after it); its creation waits too.
				PreConfig: func() { fakeNetworkController(t, ns, "cl-provider-2", "10.244.0.0/16", remapped) },
				Config:    networkConfigurationConfig(ns, "cl-provider-2", changed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("name"), knownvalue.StringExact("cl-provider-2")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("remapped_pod_cidrs"), stringsExact("10.81.0.0/16", "10.83.0.0/16")),
				},
				Check: resource.ComposeTestCheckFunc(
					checkConfiguration(ns, "cl-provider-2", "cl-provider-2",
						networkingv1beta1.ClusterConfigCIDR{Pod: cidrs("10.244.0.0/16", "10.245.0.0/16")}),
					nwCheckGone("consumer", confObj(ns, "cl-provider")),
				),
			},
			{
				// Deleted out of band: re-created (without waiting).
				PreConfig: func() { nwDeleteOutOfBand(t, "consumer", confObj(ns, "cl-provider-2")) },
				Config:    networkConfigurationConfig(ns, "cl-provider-2", seed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: checkConfiguration(ns, "cl-provider-2", "cl-provider-2",
					networkingv1beta1.ClusterConfigCIDR{Pod: cidrs("10.243.0.0/16"), External: cidrs("10.70.0.0/16")}),
			},
		},
	})
}

// TestAccNetworkConfigurationWaitTimeout: nothing remaps; the wait times out with an error naming
// the module, the object, the cluster and the last status seen; the object stays managed.
func TestAccNetworkConfigurationWaitTimeout(t *testing.T) {
	const ns = "nw-netconf-timeout"
	nwTestNamespace(t, "consumer", ns)
	body := `remote_pod_cidrs = ["10.243.0.0/16"]
  wait_for_remap = true
  timeouts {
    create = "2s"
  }`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             nwCheckGone("consumer", confObj(ns, "cl-provider")),
		Steps: []resource.TestStep{
			{
				Config: networkConfigurationConfig(ns, "cl-provider", body),
				ExpectError: regexp.MustCompile(`(?s)liqo_network_configuration: Configuration nw-netconf-timeout/cl-provider in\s+cluster\s+"consumer".*` +
					`waited 2s.*last seen: no status.remote, no\s+conditions`),
			},
			{
				// Saved before the wait: in the state, tainted, so replaced.
				Config: networkConfigurationConfig(ns, "cl-provider", `remote_pod_cidrs = ["10.243.0.0/16"]`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("liqo_network_configuration.peer", plancheck.ResourceActionReplace),
				}},
			},
			{
				// A status whose condition observed an older generation is stale: after the CIDRs
				// change, it does not end the wait.
				PreConfig: func() {
					conf, err := getConfiguration(ns, "cl-provider")
					if err != nil {
						t.Fatal(err)
					}
					conf.Status.Remote = &networkingv1beta1.ClusterConfig{CIDR: networkingv1beta1.ClusterConfigCIDR{Pod: cidrs("10.81.0.0/16")}}
					conf.Status.Conditions = []metav1.Condition{{Type: networkingv1beta1.ConfigurationConditionNetworkCIDRsConfigured, Status: metav1.ConditionTrue, Reason: "NoOverlap",
						Message: "ok", ObservedGeneration: conf.Generation, LastTransitionTime: metav1.Now()}}
					if err := cluster("consumer").Client.Status().Update(context.Background(), conf); err != nil {
						t.Fatal(err)
					}
				},
				Config: networkConfigurationConfig(ns, "cl-provider", `remote_pod_cidrs = ["10.244.0.0/16"]
  wait_for_remap = true
  timeouts {
    update = "2s"
  }`),
				ExpectError: regexp.MustCompile(`(?s)waited 2s.*conditions\s+NetworkCIDRsConfigured=True\s+\(NoOverlap: ok\)\s+\(condition\s+NetworkCIDRsConfigured\s+observed\s+generation\s+1,\s+the\s+object\s+is\s+at\s+2\)`),
			},
		},
	})
}

func TestAccNetworkConfigurationValidation(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{
				Config:      networkConfigurationConfig("nw-bad", "cl-provider", `remote_pod_cidrs = ["10.243.1.0/16"]`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Invalid CIDR.*has host bits set: the network is 10.243.0.0/16`),
			},
			{
				Config:      networkConfigurationConfig("nw-bad", "cl-provider", `remote_pod_cidrs = []`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)remote_pod_cidrs.*at least 1`),
			},
			{
				Config:      networkConfigurationConfig("nw-bad", "cl-provider", `remote_pod_cidrs = ["10.243.0.0/16"]`+"\n"+`remote_external_cidrs = ["not-a-cidr"]`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Invalid CIDR.*"not-a-cidr" is not a CIDR`),
			},
		},
	})
}
