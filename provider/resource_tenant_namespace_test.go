package provider_test

import (
	"context"
	"fmt"
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
)

func tenantNamespaceConfig(remoteID, labels string) string {
	return providerBlock() + fmt.Sprintf(`
resource "liqo_tenant_namespace" "peer" {
  cluster           = "consumer"
  remote_cluster_id = %q
  labels            = %s
}
`, remoteID, labels)
}

// namespaceLabels returns the labels of a namespace in a test cluster, or an error when it is
// absent.
func namespaceLabels(ctx context.Context, clusterName, name string) (map[string]string, error) {
	ns := &corev1.Namespace{}
	if err := cluster(clusterName).Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return nil, err
	}
	return ns.Labels, nil
}

func checkNamespaceLabel(clusterName, name, key, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		labels, err := namespaceLabels(context.Background(), clusterName, name)
		if err != nil {
			return fmt.Errorf("namespace %s in %s: %w", name, clusterName, err)
		}
		if got, ok := labels[key]; !ok || got != want {
			return fmt.Errorf("namespace %s label %s = %q (present %v), want %q", name, key, got, ok, want)
		}
		return nil
	}
}

func checkNamespaceGone(clusterName, name string) func(*terraform.State) error {
	return func(*terraform.State) error {
		_, err := namespaceLabels(context.Background(), clusterName, name)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("reading namespace %s in %s: %w", name, clusterName, err)
		}
		return fmt.Errorf("namespace %s in %s still exists after destroy", name, clusterName)
	}
}

// deleteNamespaceOutOfBand deletes a namespace as someone outside Terraform would, and waits
// until it is gone.
func deleteNamespaceOutOfBand(t *testing.T, clusterName, name string) {
	t.Helper()
	ctx := context.Background()
	c := cluster(clusterName).Client
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("namespace %s not gone: %v", name, err)
	}
}

func TestAccTenantNamespace(t *testing.T) {
	const addr = "liqo_tenant_namespace.peer"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(s *terraform.State) error {
			for _, n := range []string{"liqo-tenant-cl-alpha", "liqo-tenant-cl-beta"} {
				if err := checkNamespaceGone("consumer", n)(s); err != nil {
					return err
				}
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: tenantNamespaceConfig("cl-alpha", `{ team = "platform" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					// The default name is in the plan for review, not "known after apply".
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("name"), knownvalue.StringExact("liqo-tenant-cl-alpha")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("consumer/liqo-tenant-cl-alpha")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("name"), knownvalue.StringExact("liqo-tenant-cl-alpha")),
				},
				Check: resource.ComposeTestCheckFunc(
					checkNamespaceLabel("consumer", "liqo-tenant-cl-alpha", "liqo.io/remote-cluster-id", "cl-alpha"),
					checkNamespaceLabel("consumer", "liqo-tenant-cl-alpha", "liqo.io/tenant-namespace", "true"),
					checkNamespaceLabel("consumer", "liqo-tenant-cl-alpha", "team", "platform"),
				),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           "consumer/liqo-tenant-cl-alpha",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"labels", "timeouts"},
			},
			{
				// In place: a label changes, another appears.
				Config: tenantNamespaceConfig("cl-alpha", `{ team = "network", tier = "gold" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkNamespaceLabel("consumer", "liqo-tenant-cl-alpha", "team", "network"),
					checkNamespaceLabel("consumer", "liqo-tenant-cl-alpha", "tier", "gold"),
				),
			},
			{
				// A new remote cluster ID is a new namespace.
				Config: tenantNamespaceConfig("cl-beta", `{ team = "network" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkNamespaceLabel("consumer", "liqo-tenant-cl-beta", "liqo.io/remote-cluster-id", "cl-beta"),
					func(s *terraform.State) error { return checkNamespaceGone("consumer", "liqo-tenant-cl-alpha")(s) },
				),
			},
			{
				// Deleted outside Terraform: planned for re-creation.
				PreConfig: func() { deleteNamespaceOutOfBand(t, "consumer", "liqo-tenant-cl-beta") },
				Config:    tenantNamespaceConfig("cl-beta", `{ team = "network" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: checkNamespaceLabel("consumer", "liqo-tenant-cl-beta", "liqo.io/tenant-namespace", "true"),
			},
		},
	})
}
