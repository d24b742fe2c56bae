package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// virtualNodeConfig is a peering that makes no virtual node, a second slice of the same
// provider, and two liqo_virtual_node, one per slice; nodeA and nodeB are their extra
// attributes.
func virtualNodeConfig(e *testenv.Env, cid, pid, nodeA, nodeB string) string {
	return peeringClustersBlock(e, map[string]string{"consumer": cid, "provider": pid}) + fmt.Sprintf(`
resource "liqo_peering" "this" {
  consumer_cluster    = "consumer"
  provider_cluster    = "provider"
  networking          = false
  cpu                 = "1"
  memory              = "1Gi"
  pods                = "10"
  create_virtual_node = false
}

resource "liqo_resource_slice" "b" {
  cluster             = "consumer"
  name                = "pool-b"
  namespace           = liqo_peering.this.consumer_tenant_namespace
  provider_cluster_id = liqo_peering.this.provider_cluster_id
  consumer_cluster_id = liqo_peering.this.consumer_cluster_id
  cpu                 = "2"
  memory              = "2Gi"
  pods                = "20"
  create_virtual_node = false
  wait_for_acceptance = true
}

resource "liqo_virtual_node" "a" {
  cluster             = "consumer"
  name                = "pool-a"
  provider_cluster_id = liqo_peering.this.provider_cluster_id
  resource_slice_name = liqo_peering.this.provider_cluster_id
%s}

resource "liqo_virtual_node" "b" {
  cluster             = "consumer"
  name                = "pool-b"
  namespace           = liqo_resource_slice.b.namespace
  provider_cluster_id = liqo_resource_slice.b.provider_cluster_id
  resource_slice_name = liqo_resource_slice.b.name
%s}
`, nodeA, nodeB)
}

// checkNode checks a virtual node's Node on the consumer: Ready, offering capacity, with labels.
func checkNode(e *testenv.Env, cid, name string, capacity map[corev1.ResourceName]string, labels map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if err := checkVirtualNode(e, cid, name, capacity); err != nil {
			return err
		}
		node := &corev1.Node{}
		if err := e.Cluster(cid).Client.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		for k, v := range labels {
			if node.Labels[k] != v {
				return fmt.Errorf("node %s: label %s=%q, want %q (labels %v)", name, k, node.Labels[k], v, node.Labels)
			}
		}
		return nil
	}
}

// checkPatch checks the offloading patch of a VirtualNode on the consumer.
func checkPatch(e *testenv.Env, cid, pid, name string, want *offv1beta1.OffloadingPatch) resource.TestCheckFunc {
	return func(*terraform.State) error {
		vn := &offv1beta1.VirtualNode{}
		key := client.ObjectKey{Namespace: "liqo-tenant-" + pid, Name: name}
		if err := e.Cluster(cid).Client.Get(context.Background(), key, vn); err != nil {
			return fmt.Errorf("VirtualNode %s: %w", key, err)
		}
		if !equality.Semantic.DeepEqual(vn.Spec.OffloadingPatch, want) {
			return fmt.Errorf("VirtualNode %s: offloading patch %+v, want %+v", key, vn.Spec.OffloadingPatch, want)
		}
		return nil
	}
}

// TestAccVirtualNode: two virtual nodes of one peering, each from its own ResourceSlice (the
// peering's and a second one), through the real terraform binary against two clusters running
// the controller manager: each Node is Ready with its slice's grant and its labels, and the
// VirtualNode carries the offloading patch as configured (node selector, toleration, node
// affinity, runtime class, labels not reflected); a second plan is empty; new labels and patch
// apply in place (the Node relabelled); import reads the same state back; create_node = false
// removes the Node in place and keeps the VirtualNode; bad values fail at plan, a slice that
// does not exist fails the apply naming it; destroy leaves nothing.
func TestAccVirtualNode(t *testing.T) {
	const cid, pid = "cl-consumer", "cl-provider"
	e := peeringEnv(t, cid, pid)
	cfg := func(a, b string) string { return virtualNodeConfig(e, cid, pid, a, b) }
	const patchA = `  labels = { "example.com/pool" = "a" }
  offloading_patch = {
    node_selector = { "example.com/pool" = "a" }
    tolerations   = [{ key = "example.com/dedicated", operator = "Exists", effect = "NoSchedule" }]
    node_affinity_terms = [{
      match_expressions = [{ key = "topology.kubernetes.io/zone", operator = "In", values = ["z1", "z2"] }]
    }]
    runtime_class_name   = "fast"
    labels_not_reflected = ["example.com/local-only"]
  }
`
	wantA := &offv1beta1.OffloadingPatch{
		NodeSelector:       map[string]string{"example.com/pool": "a"},
		Tolerations:        []corev1.Toleration{{Key: "example.com/dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		RuntimeClassName:   new(string),
		LabelsNotReflected: []string{"example.com/local-only"},
		Affinity: &offv1beta1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1", "z2"}}}}}}}},
	}
	*wantA.RuntimeClassName = "fast"
	patchA2 := strings.NewReplacer(`"example.com/pool" = "a" }
  offloading_patch`, `"example.com/pool" = "a2" }
  offloading_patch`, `operator = "Exists", effect = "NoSchedule"`, `operator = "Equal", value = "yes", effect = "NoExecute", toleration_seconds = 60`).Replace(patchA)
	wantA2 := wantA.DeepCopy()
	wantA2.Tolerations = []corev1.Toleration{{Key: "example.com/dedicated", Operator: corev1.TolerationOpEqual, Value: "yes",
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64)}}
	*wantA2.Tolerations[0].TolerationSeconds = 60
	capA := map[corev1.ResourceName]string{"cpu": "1", "memory": "1Gi", "pods": "10"}
	capB := map[corev1.ResourceName]string{"cpu": "2", "memory": "2Gi", "pods": "20"}
	at := func(name string) tfjsonpath.Path { return tfjsonpath.New(name) }
	bad := func(a, expect string) resource.TestStep {
		return resource.TestStep{Config: cfg(a+"\n", ""), PlanOnly: true, ExpectError: regexp.MustCompile(strings.ReplaceAll(expect, " ", `\s+`))}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             func(*terraform.State) error { return checkNothingLeft(e, cid, pid) },
		Steps: []resource.TestStep{
			bad(`  offloading_patch = { tolerations = [{ key = "k", operator = "Maybe" }] }`, `(?s)tolerations\[0\].operator.*value must be one of`),
			bad(`  labels = { "not a key!" = "x" }`, `(?s)must be a label key such as example.com/pool`),
			bad(`  offloading_patch = { node_selector = {} }`, `(?s)node_selector.*at least 1`),
			{
				Config: cfg(patchA, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("liqo_virtual_node.a", at("node_status"), knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownValue("liqo_virtual_node.a", at("namespace"), knownvalue.StringExact("liqo-tenant-"+pid)),
					statecheck.ExpectKnownValue("liqo_virtual_node.a", at("kubeconfig_secret_name"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue("liqo_virtual_node.a", at("capacity"), knownvalue.MapExact(stringValues(map[string]string{
						"cpu": "1", "memory": "1Gi", "pods": "10"}))),
					statecheck.ExpectKnownValue("liqo_virtual_node.b", at("capacity"), knownvalue.MapExact(stringValues(map[string]string{
						"cpu": "2", "memory": "2Gi", "pods": "20"}))),
				},
				Check: resource.ComposeTestCheckFunc(
					checkNode(e, cid, "pool-a", capA, map[string]string{"example.com/pool": "a"}),
					checkNode(e, cid, "pool-b", capB, nil),
					checkPatch(e, cid, pid, "pool-a", wantA),
					checkPatch(e, cid, pid, "pool-b", nil),
					func(*terraform.State) error { return noVirtualNode(e, cid, pid) }, // the peering's own: none
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: cfg(patchA2, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction("liqo_virtual_node.a", plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeTestCheckFunc(
					checkNode(e, cid, "pool-a", capA, map[string]string{"example.com/pool": "a2"}),
					checkPatch(e, cid, pid, "pool-a", wantA2),
				),
			},
			{
				Config:                  cfg(patchA2, ""),
				ResourceName:            "liqo_virtual_node.a",
				ImportState:             true,
				ImportStateId:           "consumer/liqo-tenant-" + pid + "/pool-a",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				Config: cfg(patchA2, "  create_node = false\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction("liqo_virtual_node.b", plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("liqo_virtual_node.b", at("node_status"), knownvalue.StringExact("None")),
				},
				Check: func(*terraform.State) error {
					if err := e.Cluster(cid).Client.Get(context.Background(), client.ObjectKey{Name: "pool-b"}, &corev1.Node{}); err == nil {
						return fmt.Errorf("node pool-b still there with create_node = false")
					}
					return nil
				},
			},
			{
				Config:      cfg(patchA2, "  create_node = false\n") + "\nresource \"liqo_virtual_node\" \"c\" {\n  cluster = \"consumer\"\n  name = \"pool-c\"\n  provider_cluster_id = \"" + pid + "\"\n  resource_slice_name = \"missing\"\n}\n",
				ExpectError: regexp.MustCompile(`(?s)resource_slice_name:\s+ResourceSlice\s+liqo-tenant-cl-provider/missing\s+does\s+not\s+exist.*create\s+it\s+first`),
			},
		},
	})
}
