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
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
)

// offWrappedText matches words that terraform may have wrapped over several lines in a diagnostic.
func offWrappedText(parts ...string) *regexp.Regexp {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		words := strings.Fields(p)
		for j, w := range words {
			words[j] = regexp.QuoteMeta(w)
		}
		quoted[i] = strings.Join(words, `\s+`)
	}
	return regexp.MustCompile(`(?s)` + strings.Join(quoted, `.*`))
}

func resourceSliceConfig(providerID, name, body string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_tenant_namespace" "t" {
  cluster           = "consumer"
  remote_cluster_id = %q
}

resource "liqo_resource_slice" "s" {
  cluster             = "consumer"
  name                = %q
  namespace           = liqo_tenant_namespace.t.name
  provider_cluster_id = liqo_tenant_namespace.t.remote_cluster_id
%s
}
`, providerID, name, body)
}

func getResourceSlice(ctx context.Context, clusterName, namespace, name string) (*authv1beta1.ResourceSlice, error) {
	rs := &authv1beta1.ResourceSlice{}
	err := cluster(clusterName).Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, rs)
	return rs, err
}

// checkResourceSlice checks the object in the cluster: labels, annotation and requested resources.
func checkResourceSlice(namespace, name, providerID, createVN string, want map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		rs, err := getResourceSlice(context.Background(), "consumer", namespace, name)
		if err != nil {
			return fmt.Errorf("ResourceSlice %s/%s: %w", namespace, name, err)
		}
		if rs.Labels["liqo.io/remote-cluster-id"] != providerID || rs.Labels["liqo.io/replication"] != "true" {
			return fmt.Errorf("ResourceSlice %s/%s labels %v", namespace, name, rs.Labels)
		}
		if rs.Annotations["liqo.io/create-virtual-node"] != createVN {
			return fmt.Errorf("ResourceSlice %s/%s annotations %v, want create-virtual-node=%s", namespace, name, rs.Annotations, createVN)
		}
		if rs.Spec.ProviderClusterID == nil || string(*rs.Spec.ProviderClusterID) != providerID || rs.Spec.Class != "default" {
			return fmt.Errorf("ResourceSlice %s/%s spec %+v", namespace, name, rs.Spec)
		}
		if len(rs.Spec.Resources) != len(want) {
			return fmt.Errorf("ResourceSlice %s/%s resources %v, want %v", namespace, name, rs.Spec.Resources, want)
		}
		for n, v := range want {
			q, ok := rs.Spec.Resources[corev1.ResourceName(n)]
			if !ok || q.Cmp(kresource.MustParse(v)) != 0 {
				return fmt.Errorf("ResourceSlice %s/%s resource %s = %v, want %s", namespace, name, n, q.String(), v)
			}
		}
		return nil
	}
}

func checkResourceSliceGone(namespace, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		_, err := getResourceSlice(context.Background(), "consumer", namespace, name)
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("ResourceSlice %s/%s still exists: %w", namespace, name, err)
		}
		return nil
	}
}

func deleteResourceSliceOutOfBand(t *testing.T, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	c := cluster("consumer").Client
	if err := c.Delete(ctx, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := getResourceSlice(ctx, "consumer", namespace, name)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("ResourceSlice %s/%s not gone: %v", namespace, name, err)
	}
}

// answerResourceSlice stands in for the provider's liqo controllers, which the test clusters do
// not run: in the background, once the slice requests cpu=wantCPU, it writes the status
// subresource with the given conditions and, when both are Accepted, grants what is requested.
func answerResourceSlice(t *testing.T, namespace, name, wantCPU string, conds map[authv1beta1.ResourceSliceConditionType]authv1beta1.ResourceSliceConditionStatus) {
	t.Helper()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			rs, err := getResourceSlice(ctx, "consumer", namespace, name)
			if err != nil {
				return false, nil
			}
			cpu, ok := rs.Spec.Resources[corev1.ResourceCPU]
			if !ok || cpu.Cmp(kresource.MustParse(wantCPU)) != 0 {
				return false, nil
			}
			rs.Status.Conditions = nil
			accepted := 0
			for typ, st := range conds {
				rs.Status.Conditions = append(rs.Status.Conditions, authv1beta1.ResourceSliceCondition{
					Type: typ, Status: st, LastTransitionTime: metav1.Now(), Reason: "Test" + string(st), Message: "written by the test",
				})
				if st == authv1beta1.ResourceSliceConditionAccepted {
					accepted++
				}
			}
			rs.Status.Resources = nil
			if accepted == 2 {
				rs.Status.Resources = rs.Spec.Resources.DeepCopy()
			}
			if err := cluster("consumer").Client.Status().Update(ctx, rs); err != nil {
				return false, nil // conflict: retry
			}
			return true, nil
		})
		if err != nil {
			t.Errorf("stand-in controller: ResourceSlice %s/%s never requested cpu=%s: %v", namespace, name, wantCPU, err)
		}
	}()
}

func TestAccResourceSlice(t *testing.T) {
	const addr = "liqo_resource_slice.s"
	const nsA, nsB = "liqo-tenant-cl-rs-a", "liqo-tenant-cl-rs-b"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: resource.ComposeTestCheckFunc(
			checkResourceSliceGone(nsA, "test"),
			checkResourceSliceGone(nsB, "test"),
		),
		Steps: []resource.TestStep{
			{
				Config: resourceSliceConfig("cl-rs-a", "test", `
  cpu    = "20"
  memory = "128Gi"
  resources = { "nvidia.com/gpu" = "2" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("namespace"), knownvalue.StringExact(nsA)),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("class"), knownvalue.StringExact("default")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("consumer/"+nsA+"/test")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("provider_cluster_id"), knownvalue.StringExact("cl-rs-a")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cpu"), knownvalue.StringExact("20")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("memory"), knownvalue.StringExact("128Gi")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("create_virtual_node"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("authentication_condition"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("resources_condition"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("granted"), knownvalue.Null()),
				},
				Check: checkResourceSlice(nsA, "test", "cl-rs-a", "true", map[string]string{"cpu": "20", "memory": "128Gi", "nvidia.com/gpu": "2"}),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           "consumer/" + nsA + "/test",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				// Re-negotiation in place: more CPU, pods, a quantity spelled differently, no GPU,
				// no virtual node.
				Config: resourceSliceConfig("cl-rs-a", "test", `
  cpu                 = "32"
  memory              = "131072Mi"
  pods                = "110"
  ephemeral_storage   = "20Gi"
  create_virtual_node = false`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					// The configured spelling stays, though the API server says 128Gi.
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("memory"), knownvalue.StringExact("131072Mi")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("resources"), knownvalue.Null()),
				},
				Check: checkResourceSlice(nsA, "test", "cl-rs-a", "false",
					map[string]string{"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "20Gi"}),
			},
			{
				// Another provider cluster is another slice (and tenant namespace).
				Config: resourceSliceConfig("cl-rs-b", "test", `
  cpu    = "4"
  memory = "8Gi"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkResourceSlice(nsB, "test", "cl-rs-b", "true", map[string]string{"cpu": "4", "memory": "8Gi"}),
					checkResourceSliceGone(nsA, "test"),
				),
			},
			{
				// Deleted outside Terraform: planned for re-creation.
				PreConfig: func() { deleteResourceSliceOutOfBand(t, nsB, "test") },
				Config: resourceSliceConfig("cl-rs-b", "test", `
  cpu    = "4"
  memory = "8Gi"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: checkResourceSlice(nsB, "test", "cl-rs-b", "true", map[string]string{"cpu": "4", "memory": "8Gi"}),
			},
		},
	})
}

func TestAccResourceSliceWait(t *testing.T) {
	const addr = "liqo_resource_slice.s"
	const ns = "liqo-tenant-cl-rs-wait"
	accepted := map[authv1beta1.ResourceSliceConditionType]authv1beta1.ResourceSliceConditionStatus{
		authv1beta1.ResourceSliceConditionTypeAuthentication: authv1beta1.ResourceSliceConditionAccepted,
		authv1beta1.ResourceSliceConditionTypeResources:      authv1beta1.ResourceSliceConditionAccepted,
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkResourceSliceGone(ns, "waited"),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { answerResourceSlice(t, ns, "waited", "2", accepted) },
				Config: resourceSliceConfig("cl-rs-wait", "waited", `
  cpu                 = "2"
  memory              = "4Gi"
  wait_for_acceptance = true
  timeouts { create = "2m" }`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("authentication_condition"), knownvalue.StringExact("Accepted")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("resources_condition"), knownvalue.StringExact("Accepted")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("granted"), knownvalue.MapExact(map[string]knownvalue.Check{
						"cpu": knownvalue.StringExact("2"), "memory": knownvalue.StringExact("4Gi"),
					})),
				},
			},
			{
				// Re-negotiation waits for the new grant, not the old acceptance.
				PreConfig: func() { answerResourceSlice(t, ns, "waited", "3", accepted) },
				Config: resourceSliceConfig("cl-rs-wait", "waited", `
  cpu                 = "3"
  memory              = "4Gi"
  wait_for_acceptance = true
  timeouts { update = "2m" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("granted")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("granted"), knownvalue.MapExact(map[string]knownvalue.Check{
						"cpu": knownvalue.StringExact("3"), "memory": knownvalue.StringExact("4Gi"),
					})),
				},
			},
		},
	})
}

func TestAccResourceSliceWaitTimeout(t *testing.T) {
	const ns = "liqo-tenant-cl-rs-slow"
	authOnly := map[authv1beta1.ResourceSliceConditionType]authv1beta1.ResourceSliceConditionStatus{
		authv1beta1.ResourceSliceConditionTypeAuthentication: authv1beta1.ResourceSliceConditionAccepted,
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkResourceSliceGone(ns, "slow"),
		Steps: []resource.TestStep{
			{
				// The stand-in controller only accepts the authentication: the wait times out,
				// and the error names the object, the cluster, the module and what it saw.
				PreConfig: func() { answerResourceSlice(t, ns, "slow", "1", authOnly) },
				Config: resourceSliceConfig("cl-rs-slow", "slow", `
  cpu                 = "1"
  wait_for_acceptance = true
  timeouts { create = "4s" }`),
				ExpectError: offWrappedText(`ResourceSlice `+ns+`/slow in cluster "consumer"`, `(liqo_resource_slice)`,
					`was not accepted by the provider within 4s`, `last seen: Authentication=Accepted (TestAccepted: written by the test),`,
					`Resources not reported, granted {}`, `raise timeouts.create`),
			},
			{
				// The state was saved before waiting: the object is tracked (tainted, so
				// replaced), not orphaned.
				Config: resourceSliceConfig("cl-rs-slow", "slow", `
  cpu = "1"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("liqo_resource_slice.s", plancheck.ResourceActionDestroyBeforeCreate),
				}},
			},
		},
	})
}

func TestAccResourceSliceDenied(t *testing.T) {
	const ns = "liqo-tenant-cl-rs-denied"
	denied := map[authv1beta1.ResourceSliceConditionType]authv1beta1.ResourceSliceConditionStatus{
		authv1beta1.ResourceSliceConditionTypeAuthentication: authv1beta1.ResourceSliceConditionAccepted,
		authv1beta1.ResourceSliceConditionTypeResources:      authv1beta1.ResourceSliceConditionDenied,
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkResourceSliceGone(ns, "denied"),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { answerResourceSlice(t, ns, "denied", "1", denied) },
				Config: resourceSliceConfig("cl-rs-denied", "denied", `
  cpu                 = "1"
  wait_for_acceptance = true`),
				ExpectError: offWrappedText(`ResourceSlice `+ns+`/denied in cluster "consumer"`, `(liqo_resource_slice`,
					`the provider denied it`, `Resources=Denied (TestDenied: written by the test)`),
			},
		},
	})
}

func TestAccResourceSliceBadInputs(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`cpu = "lots"`, `"lots" is not a Kubernetes quantity`},
		{`memory = "-1Gi"`, `"-1Gi" is negative`},
		{`resources = { cpu = "1" }`, `must be none of`},
		{`resources = { "nvidia.com/gpu" = "x" }`, `"x" is not a Kubernetes quantity`},
	} {
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: protoV6Providers,
			Steps: []resource.TestStep{{
				Config: providerBlock() + fmt.Sprintf(`
resource "liqo_resource_slice" "s" {
  cluster             = "consumer"
  name                = "bad"
  provider_cluster_id = "cl-bad"
  %s
}
`, tc.body),
				PlanOnly:    true,
				ExpectError: offWrappedText(tc.want),
			}},
		})
	}
}

func TestAccResourceSliceMissingNamespace(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{{
			Config: providerBlock() + `
resource "liqo_resource_slice" "s" {
  cluster             = "consumer"
  name                = "orphan"
  provider_cluster_id = "cl-rs-nowhere"
  cpu                 = "1"
}
`,
			ExpectError: offWrappedText(`creating ResourceSlice liqo-tenant-cl-rs-nowhere/orphan in cluster "consumer"`,
				`namespace liqo-tenant-cl-rs-nowhere does not exist: create the tenant namespace first (liqo_tenant_namespace)`),
		}},
	})
}
