package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// peeringOptionsConfig is a liqo_peering of consumer with provider, without networking, with
// the given attributes.
func peeringOptionsConfig(e *testenv.Env, cid, pid, attrs string) string {
	return peeringClustersBlock(e, map[string]string{"consumer": cid, "provider": pid}) + fmt.Sprintf(`
resource "liqo_peering" "this" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  networking       = false
%s
}
`, attrs)
}

// sliceOf checks the consumer's ResourceSlice of the peering: absent when want is nil, else
// with the create-virtual-node annotation and class want says.
func sliceOf(e *testenv.Env, cid, pid string, want *authv1beta1.ResourceSlice) error {
	slice := &authv1beta1.ResourceSlice{}
	err := e.Cluster(cid).Client.Get(context.Background(), client.ObjectKey{Namespace: "liqo-tenant-" + pid, Name: pid}, slice)
	switch {
	case want == nil && apierrors.IsNotFound(err):
		return nil
	case want == nil:
		return fmt.Errorf("ResourceSlice of %s on %s: %w, want none", pid, cid, err)
	case err != nil:
		return fmt.Errorf("ResourceSlice of %s on %s: %w", pid, cid, err)
	}
	if got, exp := slice.Annotations[consts.CreateVirtualNodeAnnotation], want.Annotations[consts.CreateVirtualNodeAnnotation]; got != exp {
		return fmt.Errorf("ResourceSlice of %s on %s: %s=%q, want %q", pid, cid, consts.CreateVirtualNodeAnnotation, got, exp)
	}
	if slice.Spec.Class != want.Spec.Class {
		return fmt.Errorf("ResourceSlice of %s on %s: class %q, want %q", pid, cid, slice.Spec.Class, want.Spec.Class)
	}
	return nil
}

// noVirtualNode checks that the consumer has no virtual node for the provider.
func noVirtualNode(e *testenv.Env, cid, pid string) error {
	if err := e.Cluster(cid).Client.Get(context.Background(), client.ObjectKey{Name: pid}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("virtual node %s on %s: %w, want none", pid, cid, err)
	}
	return nil
}

// TestAccPeeringSliceOptions drives liqoctl peer's offloading options through liqo_peering with
// the real terraform binary against two clusters running the controller manager: bad values
// of the new options fail at plan; create_virtual_node = false peers with a granted slice
// annotated so and no virtual node (offloading Disabled); turning it on is an in-place update
// that brings a Ready virtual node; create_resource_slice = false (no quantities) is an in-place
// update that removes the slice and the node while the peering stays authenticated; import
// reads that back; asking for the slice again brings them back; destroy leaves nothing.
func TestAccPeeringSliceOptions(t *testing.T) {
	const cid, pid = "cl-consumer", "cl-provider"
	e := peeringEnv(t, cid, pid)
	res := "liqo_peering.this"
	at := func(name string) tfjsonpath.Path { return tfjsonpath.New(name) }
	cfg := func(attrs string) string { return peeringOptionsConfig(e, cid, pid, attrs) }
	const asked = "  cpu    = \"1\"\n  memory = \"2Gi\"\n  pods   = \"10\"\n"
	bad := func(attrs, expect string) resource.TestStep {
		// Terraform wraps long messages: any space may be a line break.
		return resource.TestStep{Config: cfg(attrs), PlanOnly: true, ExpectError: regexp.MustCompile(strings.ReplaceAll(expect, " ", `\s+`))}
	}
	withNode := func(wantNode string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			if wantNode == "" {
				return noVirtualNode(e, cid, pid)
			}
			return checkVirtualNode(e, cid, pid, map[corev1.ResourceName]string{"cpu": "1", "memory": "2Gi", "pods": "10"})
		}
	}
	slice := func(createNode string) *authv1beta1.ResourceSlice {
		s := &authv1beta1.ResourceSlice{Spec: authv1beta1.ResourceSliceSpec{Class: authv1beta1.ResourceSliceClassDefault}}
		s.Annotations = map[string]string{consts.CreateVirtualNodeAnnotation: createNode}
		return s
	}
	status := func(offloading string) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(res, at("status"), knownvalue.ObjectExact(map[string]knownvalue.Check{
			"networking": knownvalue.StringExact("Disabled"), "authentication": knownvalue.StringExact("Established"),
			"offloading": knownvalue.StringExact(offloading)}))
	}
	inPlace := func() resource.ConfigPlanChecks {
		return resource.ConfigPlanChecks{
			PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionUpdate)},
			PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             func(*terraform.State) error { return checkNothingLeft(e, cid, pid) },
		Steps: []resource.TestStep{
			bad("  create_resource_slice = false\n  create_virtual_node = true",
				`(?s)A virtual node needs a resource slice.*create_virtual_node = true stands a virtual node for the slice`),
			bad(asked+"  resource_slice_class = \"GPU!\"", `(?s)resource_slice_class.*must be a DNS label such as default or gpu`),
			bad(asked+"  in_band = true", `(?s)in_band needs networking.*no tunnel: turn networking on, or remove in_band`),
			bad(asked+"  gateway = { server_location = \"Elsewhere\" }", `(?s)gateway.server_location.*value must be one of`),
			bad(asked+"  gateway = {\n    service_type = \"NodePort\"\n    load_balancer_ip = \"192.0.2.7\"\n  }",
				`(?s)load_balancer_ip needs a LoadBalancer service.*service_type is NodePort`),
			bad(asked+"  gateway = { load_balancer_ip = \"192.0.2\" }", `(?s)Invalid IP address.*"192.0.2" is not an IP address`),
			bad(asked+"  gateway = { client_address = \"gw_1.example.com\" }",
				`(?s)Invalid address.*"gw_1.example.com" is neither an IP address.*nor a DNS name`),
			bad(asked+"  gateway = { client_port = 70000 }", `(?s)gateway.client_port.*between 1 and 65535`),
			{
				Config: cfg(asked + "  create_virtual_node = false"),
				ConfigStateChecks: []statecheck.StateCheck{
					status("Disabled"),
					statecheck.ExpectKnownValue(res, at("create_virtual_node"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(res, at("create_resource_slice"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(res, at("resource_slice_class"), knownvalue.StringExact("default")),
					statecheck.ExpectKnownValue(res, at("virtual_node_name"), knownvalue.Null()),
					statecheck.ExpectKnownValue(res, at("granted"), knownvalue.MapExact(stringValues(map[string]string{
						"cpu": "1", "memory": "2Gi", "pods": "10"}))),
				},
				Check: resource.ComposeTestCheckFunc(withNode(""), func(*terraform.State) error { return sliceOf(e, cid, pid, slice("false")) }),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{
				Config:           cfg(asked),
				ConfigPlanChecks: inPlace(),
				ConfigStateChecks: []statecheck.StateCheck{
					status("Ready"),
					statecheck.ExpectKnownValue(res, at("create_virtual_node"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(res, at("virtual_node_name"), knownvalue.StringExact(pid)),
				},
				Check: resource.ComposeTestCheckFunc(withNode(pid), func(*terraform.State) error { return sliceOf(e, cid, pid, slice("true")) }),
			},
			{
				Config:           cfg("  create_resource_slice = false\n  create_virtual_node = false"),
				ConfigPlanChecks: inPlace(),
				ConfigStateChecks: []statecheck.StateCheck{
					status("Disabled"),
					statecheck.ExpectKnownValue(res, at("create_resource_slice"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(res, at("cpu"), knownvalue.Null()),
					statecheck.ExpectKnownValue(res, at("granted"), knownvalue.Null()),
					statecheck.ExpectKnownValue(res, at("virtual_node_name"), knownvalue.Null()),
				},
				Check: resource.ComposeTestCheckFunc(withNode(""), func(*terraform.State) error { return sliceOf(e, cid, pid, nil) }),
			},
			{
				Config:                  cfg("  create_resource_slice = false\n  create_virtual_node = false"),
				ResourceName:            res,
				ImportState:             true,
				ImportStateId:           "consumer/provider",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts", "create_virtual_node"}, // no slice to read it from: the default
			},
			{
				Config:            cfg(asked),
				ConfigPlanChecks:  inPlace(),
				ConfigStateChecks: []statecheck.StateCheck{status("Ready")},
				Check:             withNode(pid),
			},
		},
	})
}

// grantClass plays the provider's controller of a ResourceSlice class until the test ends:
// it accepts every slice of that class in the provider's tenant namespace of the consumer,
// granting what it asks, as Liqo's controllers do for the default class.
func grantClass(t *testing.T, e *testenv.Env, cid, pid string, class authv1beta1.ResourceSliceClass) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := e.Cluster(pid).Client
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			slices := &authv1beta1.ResourceSliceList{}
			if err := c.List(ctx, slices, client.InNamespace("liqo-tenant-"+cid)); err != nil {
				return false, nil
			}
			for i := range slices.Items {
				s := &slices.Items[i]
				if s.Spec.Class != class || len(s.Status.Conditions) > 0 {
					continue
				}
				now := metav1.Now()
				s.Status.Resources = s.Spec.Resources.DeepCopy()
				s.Status.Conditions = []authv1beta1.ResourceSliceCondition{
					{Type: authv1beta1.ResourceSliceConditionTypeAuthentication, Status: authv1beta1.ResourceSliceConditionAccepted,
						LastTransitionTime: now, Reason: "GpuClass", Message: "accepted by the gpu class's controller"},
					{Type: authv1beta1.ResourceSliceConditionTypeResources, Status: authv1beta1.ResourceSliceConditionAccepted,
						LastTransitionTime: now, Reason: "GpuClass", Message: "granted by the gpu class's controller"},
				}
				_ = c.Status().Update(ctx, s)
			}
			return false, nil
		})
	}()
}

// TestAccPeeringSliceClass: a liqo_peering whose slice is of another class than the default is
// not granted by Liqo's own controllers: the create times out naming the class and who decides
// it. Once the class's controller runs (played here), the tainted peering is replaced and ends
// with a Ready virtual node of what that controller granted; a change of class plans a
// replacement.
func TestAccPeeringSliceClass(t *testing.T) {
	const cid, pid = "cl-consumer", "cl-provider"
	e := peeringEnv(t, cid, pid)
	res := "liqo_peering.this"
	cfg := func(timeout string) string {
		return peeringOptionsConfig(e, cid, pid, `  cpu    = "1"
  memory = "2Gi"
  pods   = "10"
  resource_slice_class = "gpu"
  timeouts {
    create = "`+timeout+`"
  }`)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             func(*terraform.State) error { return checkNothingLeft(e, cid, pid) },
		Steps: []resource.TestStep{
			{
				Config:      cfg("8s"),
				ExpectError: regexp.MustCompile(`(?s)to\s+grant\s+ResourceSlice.*class\s+"gpu":\s+the\s+provider's\s+controller\s+for\s+that\s+class\s+decides\s+it`),
			},
			{
				PreConfig: func() { grantClass(t, e, cid, pid, "gpu") },
				Config:    cfg("2m"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(res, plancheck.ResourceActionReplace)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(res, tfjsonpath.New("resource_slice_class"), knownvalue.StringExact("gpu")),
					statecheck.ExpectKnownValue(res, tfjsonpath.New("status").AtMapKey("offloading"), knownvalue.StringExact("Ready")),
				},
				Check: func(*terraform.State) error {
					return checkVirtualNode(e, cid, pid, map[corev1.ResourceName]string{"cpu": "1", "memory": "2Gi", "pods": "10"})
				},
			},
			{
				Config:             strings.Replace(cfg("2m"), `"gpu"`, `"default"`, 1),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(res, plancheck.ResourceActionReplace)}},
			},
		},
	})
}

// TestAccPeeringLiqoNamespace: both clusters run the controller manager installed in
// liqo-system (--liqo-namespace), the provider block says so once (liqo_namespace, the default
// of every clusters entry): liqo_peering peers them to a Ready virtual node, the cluster IDs
// and Networks are in liqo-system and nothing of ours is in liqo; liqo_cluster reads them; the
// provider left at the default namespace fails naming the ConfigMap it looked for and the
// attribute to set.
func TestAccPeeringLiqoNamespace(t *testing.T) {
	const cid, pid, ns = "cl-consumer", "cl-provider", "liqo-system"
	e := peeringEnvWith(t, []string{"--liqo-namespace", ns}, cid, pid)
	cfg := func(liqoNS string) string {
		return strings.Replace(peeringOptionsConfig(e, cid, pid, "  cpu    = \"1\"\n  memory = \"1Gi\"\n  pods   = \"10\""),
			"provider \"liqo\" {\n", "provider \"liqo\" {\n  "+liqoNS+"\n", 1) + `
data "liqo_cluster" "provider" {
  cluster = "provider"
}
`
	}
	for _, id := range []string{cid, pid} {
		cm := &corev1.ConfigMap{}
		if err := e.Cluster(id).Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "liqo-clusterid-configmap"}, cm); err != nil ||
			cm.Data["CLUSTER_ID"] != id {
			t.Fatalf("cluster ID of %s in %s: %v, %v", id, ns, cm.Data, err)
		}
		if err := e.Cluster(id).Client.Get(context.Background(), client.ObjectKey{Name: "liqo"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace liqo on %s with --liqo-namespace %s: %v, want none", id, ns, err)
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             func(*terraform.State) error { return checkNothingLeft(e, cid, pid) },
		Steps: []resource.TestStep{
			{
				Config:      cfg(""),
				ExpectError: regexp.MustCompile(`(?s)no\s+cluster\s+ID\s+\(ConfigMap\s+liqo/liqo-clusterid-configmap.*set\s+liqo_namespace`),
			},
			{
				Config: cfg(`liqo_namespace = "` + ns + `"`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("liqo_peering.this", tfjsonpath.New("status").AtMapKey("offloading"), knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownValue("data.liqo_cluster.provider", tfjsonpath.New("cluster_id"), knownvalue.StringExact(pid)),
					statecheck.ExpectKnownValue("data.liqo_cluster.provider", tfjsonpath.New("pod_cidrs"),
						knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("10.131.0.0/16")})),
				},
				Check: func(*terraform.State) error {
					return checkVirtualNode(e, cid, pid, map[corev1.ResourceName]string{"cpu": "1", "memory": "1Gi", "pods": "10"})
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
