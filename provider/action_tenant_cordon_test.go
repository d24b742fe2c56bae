package provider_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// cordonConfig is a peering without networking and the three invocations of liqo_tenant_cordon
// on its Tenant (and one on a consumer with no Tenant).
func cordonConfig(e *testenv.Env, cid, pid string) string {
	return requiredProvidersBlock + peeringClustersBlock(e, map[string]string{"consumer": cid, "provider": pid}) + fmt.Sprintf(`
resource "liqo_peering" "this" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  networking       = false
  cpu              = "2"
  memory           = "4Gi"
  pods             = "20"
}

action "liqo_tenant_cordon" "cordon" {
  config {
    cluster             = "provider"
    consumer_cluster_id = %[1]q
    tenant_condition    = "Cordoned"
  }
}

action "liqo_tenant_cordon" "drain" {
  config {
    cluster             = "provider"
    consumer_cluster_id = %[1]q
    tenant_condition    = "Drained"
  }
}

action "liqo_tenant_cordon" "uncordon" {
  config {
    cluster             = "provider"
    consumer_cluster_id = %[1]q
    tenant_condition    = "Active"
  }
}

action "liqo_tenant_cordon" "nobody" {
  config {
    cluster             = "provider"
    consumer_cluster_id = "nobody"
    tenant_condition    = "Cordoned"
  }
}
`, cid)
}

// TestActionTenantCordon invokes liqo_tenant_cordon with the real terraform CLI on a peering of
// clusters running the real controller manager: Cordoned keeps the granted slice; Drained has
// the provider deny it (TenantDrained) and the consumer's virtual node goes; Active negotiates
// it again and the virtual node comes back. Each invocation shows its progress and result and
// changes no resource; a consumer with no Tenant fails, naming what to check; a bad condition
// fails at plan.
func TestActionTenantCordon(t *testing.T) {
	const cid, pid = "cl-cordon-consumer", "cl-cordon-provider"
	e := peeringEnv(t, cid, pid)
	d := newTerraformDir(t, tfSource(t, cordonConfig(e, cid, pid)))
	args := []string{"-input=false", "-no-color", "-auto-approve"}
	d.run(t, append([]string{"apply"}, args...)...)
	t.Cleanup(func() {
		d.run(t, append([]string{"destroy"}, args...)...)
		if err := checkNothingLeft(e, cid, pid); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	prov, cons := e.Cluster(pid).Client, e.Cluster(cid).Client
	tenantCondition := func() authv1beta1.TenantCondition {
		list := &authv1beta1.TenantList{}
		if err := prov.List(ctx, list, client.InNamespace("liqo-tenant-"+cid)); err != nil || len(list.Items) != 1 {
			t.Fatalf("the Tenants of %s: %d, %v", cid, len(list.Items), err)
		}
		return list.Items[0].Spec.TenantCondition
	}
	virtualNodes := func() int {
		list := &corev1.NodeList{}
		if err := cons.List(ctx, list, client.MatchingLabels{consts.TypeLabel: consts.VirtualNodeType}); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	invoke := func(action string, want ...string) {
		t.Helper()
		out := oneLine(d.run(t, append([]string{"apply", "-invoke=action.liqo_tenant_cordon." + action}, args...)...))
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("invoking %s: the output lacks %q:\n%s", action, w, out)
			}
		}
	}
	quietPlan := func(after string) {
		t.Helper()
		if code, plan := d.exitCode(t, "plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
			t.Errorf("plan after %s: exit %d, want no changes (an invocation changes no resource):\n%s", after, code, plan)
		}
	}
	tenant := "Tenant liqo-tenant-" + cid + "/" + cid + ` in cluster "provider" (` // then the API server's URL

	invoke("cordon", tenant, "): tenantCondition Active → Cordoned", "done: "+tenant, ") is Cordoned;", "1 (cl-cordon-provider ({cpu=2, memory=4Gi, pods=20})) granted")
	if c := tenantCondition(); c != authv1beta1.TenantConditionCordoned {
		t.Errorf("after cordon: tenantCondition %q", c)
	}
	if n := virtualNodes(); n != 1 {
		t.Errorf("after cordon: %d virtual nodes, want 1 (a cordon keeps what was granted)", n)
	}
	quietPlan("cordon")

	invoke("drain", "): tenantCondition Cordoned → Drained", ") is Drained;", "Authentication=Denied (TenantDrained",
		"offloaded pods of "+cid+" left on the cluster: none")
	if c := tenantCondition(); c != authv1beta1.TenantConditionDrained {
		t.Errorf("after drain: tenantCondition %q", c)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return virtualNodes() == 0, nil
	}); err != nil {
		t.Errorf("after drain: %d virtual nodes, want none (the denied slice's node goes)", virtualNodes())
	}

	invoke("uncordon", "): tenantCondition Drained → Active", ") is Active;")
	if c := tenantCondition(); c != authv1beta1.TenantConditionActive {
		t.Errorf("after uncordon: tenantCondition %q", c)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return virtualNodes() == 1, nil
	}); err != nil {
		t.Errorf("after uncordon: %d virtual nodes, want the peering's back", virtualNodes())
	}
	quietPlan("uncordon")

	code, out := d.exitCode(t, append([]string{"apply", "-invoke=action.liqo_tenant_cordon.nobody"}, args...)...)
	if code == 0 || !strings.Contains(oneLine(out), `no Tenant of consumer "nobody" in namespace liqo-tenant-nobody`) {
		t.Errorf("invoking on a consumer with no Tenant: exit %d, want a failure naming it:\n%s", code, out)
	}
}
