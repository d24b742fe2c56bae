package provider_test

import (
	"context"
	"fmt"
	"reflect"
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

	offloadingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
)

func namespaceOffloadingConfig(body string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_namespace_offloading" "demo" {
  cluster   = "consumer"
  namespace = "nsoff-demo"
%s
}
`, body)
}

// offCreateNamespace makes a plain namespace for a test and deletes it at the end.
func offCreateNamespace(t *testing.T, clusterName, name string) {
	t.Helper()
	ctx := context.Background()
	c := cluster(clusterName).Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
}

func getNamespaceOffloading(ctx context.Context, namespace string) (*offloadingv1beta1.NamespaceOffloading, error) {
	nsoff := &offloadingv1beta1.NamespaceOffloading{}
	err := cluster("consumer").Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "offloading"}, nsoff)
	return nsoff, err
}

func checkNamespaceOffloading(namespace string, want offloadingv1beta1.NamespaceOffloadingSpec) resource.TestCheckFunc {
	return func(*terraform.State) error {
		nsoff, err := getNamespaceOffloading(context.Background(), namespace)
		if err != nil {
			return fmt.Errorf("NamespaceOffloading %s/offloading: %w", namespace, err)
		}
		if !reflect.DeepEqual(nsoff.Spec, want) {
			return fmt.Errorf("NamespaceOffloading %s/offloading spec\n%+v\nwant\n%+v", namespace, nsoff.Spec, want)
		}
		return nil
	}
}

func TestAccNamespaceOffloading(t *testing.T) {
	const addr = "liqo_namespace_offloading.demo"
	const ns = "nsoff-demo"
	offCreateNamespace(t, "consumer", ns)
	inEU := `
  cluster_selector = [{
    match_expressions = [{ key = "topology.kubernetes.io/region", operator = "In", values = ["eu-west", "eu-south"] }]
  }]`
	twoTerms := `
  pod_offloading_strategy = "Remote"
  cluster_selector = [
    { match_expressions = [{ key = "liqo.io/provider", operator = "Exists" }] },
    { match_expressions = [
        { key = "example.com/cores", operator = "Gt", values = ["3"] },
        { key = "example.com/tier", operator = "NotIn", values = ["bronze"] },
    ] },
  ]`
	selected := `
  namespace_mapping_strategy = "SelectedName"
  remote_namespace_name      = "nsoff-remote"
  pod_offloading_strategy    = "Local"`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(*terraform.State) error {
			_, err := getNamespaceOffloading(context.Background(), ns)
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("NamespaceOffloading %s/offloading still exists: %w", ns, err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: namespaceOffloadingConfig(inEU),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("consumer/"+ns)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("namespace_mapping_strategy"), knownvalue.StringExact("DefaultName")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("pod_offloading_strategy"), knownvalue.StringExact("LocalAndRemote")),
					// No controllers in the test clusters: nothing reported yet.
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("remote_namespace_name"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cluster_selector").AtSliceIndex(0).AtMapKey("match_expressions").
						AtSliceIndex(0).AtMapKey("values"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("eu-west"), knownvalue.StringExact("eu-south")})),
				},
				Check: checkNamespaceOffloading(ns, offloadingv1beta1.NamespaceOffloadingSpec{
					NamespaceMappingStrategy: "DefaultName", PodOffloadingStrategy: "LocalAndRemote",
					ClusterSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "topology.kubernetes.io/region", Operator: "In", Values: []string{"eu-west", "eu-south"}}}}}},
				}),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           "consumer/" + ns,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				// In place: where pods run, and which clusters.
				Config: namespaceOffloadingConfig(twoTerms),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: checkNamespaceOffloading(ns, offloadingv1beta1.NamespaceOffloadingSpec{
					NamespaceMappingStrategy: "DefaultName", PodOffloadingStrategy: "Remote",
					ClusterSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
						{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "liqo.io/provider", Operator: "Exists"}}},
						{MatchExpressions: []corev1.NodeSelectorRequirement{
							{Key: "example.com/cores", Operator: "Gt", Values: []string{"3"}},
							{Key: "example.com/tier", Operator: "NotIn", Values: []string{"bronze"}},
						}},
					}},
				}),
			},
			{
				// The naming of the remote namespace cannot change in place.
				Config: namespaceOffloadingConfig(selected),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("remote_namespace_name"), knownvalue.StringExact("nsoff-remote")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cluster_selector"), knownvalue.Null()),
				},
				Check: checkNamespaceOffloading(ns, offloadingv1beta1.NamespaceOffloadingSpec{
					NamespaceMappingStrategy: "SelectedName", PodOffloadingStrategy: "Local", RemoteNamespaceName: "nsoff-remote",
				}),
			},
			{
				// The controllers report (the test writes the status as their stand-in): the
				// phase shows up, and the plan stays empty.
				PreConfig: func() {
					ctx := context.Background()
					nsoff, err := getNamespaceOffloading(ctx, ns)
					if err != nil {
						t.Fatal(err)
					}
					nsoff.Status.OffloadingPhase = offloadingv1beta1.ReadyOffloadingPhaseType
					nsoff.Status.RemoteNamespaceName = "nsoff-remote"
					if err := cluster("consumer").Client.Status().Update(ctx, nsoff); err != nil {
						t.Fatal(err)
					}
				},
				Config: namespaceOffloadingConfig(selected),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Ready")),
				},
			},
			{
				// Deleted outside Terraform: planned for re-creation.
				PreConfig: func() {
					ctx := context.Background()
					c := cluster("consumer").Client
					if err := c.Delete(ctx, &offloadingv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "offloading"}}); err != nil {
						t.Fatal(err)
					}
					err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
						_, err := getNamespaceOffloading(ctx, ns)
						return apierrors.IsNotFound(err), nil
					})
					if err != nil {
						t.Fatal(err)
					}
				},
				Config: namespaceOffloadingConfig(selected),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: checkNamespaceOffloading(ns, offloadingv1beta1.NamespaceOffloadingSpec{
					NamespaceMappingStrategy: "SelectedName", PodOffloadingStrategy: "Local", RemoteNamespaceName: "nsoff-remote",
				}),
			},
			{
				// EnforceSameName: the remote name is known at plan time; an empty selector
				// stays empty.
				Config: namespaceOffloadingConfig(`
  namespace_mapping_strategy = "EnforceSameName"
  cluster_selector           = []`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("remote_namespace_name"), knownvalue.StringExact(ns)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cluster_selector"), knownvalue.ListSizeExact(0)),
				},
				Check: checkNamespaceOffloading(ns, offloadingv1beta1.NamespaceOffloadingSpec{
					NamespaceMappingStrategy: "EnforceSameName", PodOffloadingStrategy: "LocalAndRemote",
					ClusterSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{}},
				}),
			},
		},
	})
}

func TestAccNamespaceOffloadingBadInputs(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`namespace_mapping_strategy = "SelectedName"`, `namespace_mapping_strategy = "SelectedName" needs remote_namespace_name`},
		{`remote_namespace_name = "x"`, `remote_namespace_name can only be set with namespace_mapping_strategy = "SelectedName", not DefaultName (the default)`},
		{`namespace_mapping_strategy = "SameName"`, `value must be one of`},
		{`pod_offloading_strategy = "Anywhere"`, `value must be one of`},
		{`cluster_selector = [{ match_expressions = [{ key = "a", operator = "In" }] }]`, `operator In needs one or more values`},
		{`cluster_selector = [{ match_expressions = [{ key = "a", operator = "Exists", values = ["b"] }] }]`, `operator Exists takes no values`},
		{`cluster_selector = [{ match_expressions = [{ key = "a", operator = "Gt", values = ["three"] }] }]`, `operator Gt takes an integer value, not "three"`},
		{`cluster_selector = [{ match_expressions = [{ key = "a", operator = "Near", values = ["b"] }] }]`, `value must be one of`},
	} {
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: protoV6Providers,
			Steps: []resource.TestStep{{
				Config:      namespaceOffloadingConfig(tc.body),
				PlanOnly:    true,
				ExpectError: offWrappedText(tc.want),
			}},
		})
	}
}

func TestAccNamespaceOffloadingMissingNamespace(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{{
			Config: providerBlock() + `
resource "liqo_namespace_offloading" "missing" {
  cluster   = "consumer"
  namespace = "nsoff-missing"
}
`,
			ExpectError: offWrappedText(`creating NamespaceOffloading nsoff-missing/offloading in cluster "consumer"`,
				`namespace nsoff-missing does not exist: create it first`),
		}},
	})
}
