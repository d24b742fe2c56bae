package provider_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// experimentalTerraform is the Terraform build with experiments allowed that `make test` builds
// (make terraform-experimental): only such builds take -allow-deferral.
func experimentalTerraform(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("LIQO_TERRAFORM_EXPERIMENTAL")
	if bin == "" {
		t.Skip("LIQO_TERRAFORM_EXPERIMENTAL is not set: run through `make test`, which builds Terraform with experiments allowed (make terraform-experimental)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("LIQO_TERRAFORM_EXPERIMENTAL=%s: %v; run `make terraform-experimental`", bin, err)
	}
	return bin
}

// deferredConfig is a configuration whose clusters map holds a cluster whose connection is known
// only after apply (a terraform_data's output stands for a cluster created in the same run),
// with a resource and a data source of that cluster.
func deferredConfig(kubeconfig, remoteID string) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    liqo = { source = "peerkit/liqo" }
  }
}

resource "terraform_data" "kubeconfig" {
  input = %q
}

provider "liqo" {
  clusters = {
    new = { config_path = terraform_data.kubeconfig.output }
  }
}

data "liqo_cluster" "new" {
  cluster = "new"
}

resource "liqo_tenant_namespace" "peer" {
  cluster           = "new"
  remote_cluster_id = %q
}

output "cluster_id" {
  value = data.liqo_cluster.new.cluster_id
}
`, kubeconfig, remoteID)
}

// planJSON is what the test reads of `terraform show -json <plan>`.
type planJSON struct {
	ResourceChanges []struct {
		Address string `json:"address"`
	} `json:"resource_changes"`
	DeferredChanges []struct {
		Reason         string `json:"reason"`
		ResourceChange struct {
			Address string `json:"address"`
		} `json:"resource_change"`
	} `json:"deferred_changes"`
	Complete *bool `json:"complete"`
}

func (p planJSON) deferred() map[string]string {
	out := map[string]string{}
	for _, d := range p.DeferredChanges {
		out[d.ResourceChange.Address] = d.Reason
	}
	return out
}

func (p planJSON) changed() []string {
	var out []string
	for _, c := range p.ResourceChanges {
		out = append(out, c.Address)
	}
	return out
}

// TestDeferredUntilClusterKnown: a resource and a data source of a cluster whose connection is
// known only after apply are deferred (Terraform's -allow-deferral, an experimental build): the
// first plan has only what that cluster depends on, with the two deferred because the provider
// configuration is unknown; its apply leaves the plan incomplete; the next apply makes the tenant
// namespace in the cluster; then the plan is empty. Without -allow-deferral the same
// configuration plans as before (the cluster's objects with unknown values).
func TestDeferredUntilClusterKnown(t *testing.T) {
	bin := experimentalTerraform(t)
	clusterID, _, _, _ := setupClusterFacts(t) // the provider test cluster has a cluster ID
	src := t.TempDir()
	const remoteID = "deferred-peer"
	if err := os.WriteFile(filepath.Join(src, "main.tf"), []byte(deferredConfig(cluster("provider").KubeconfigPath, remoteID)), 0o600); err != nil {
		t.Fatal(err)
	}
	d := newTerraformDir(t, src)
	d.bin = bin
	t.Cleanup(func() {
		if out, err := d.command("destroy", "-auto-approve", "-input=false", "-allow-deferral").CombinedOutput(); err != nil {
			t.Errorf("destroy: %v\n%s", err, out)
		}
	})

	plan := func(extra ...string) planJSON {
		t.Helper()
		d.run(t, append([]string{"plan", "-input=false", "-out=tfplan"}, extra...)...)
		var p planJSON
		if err := json.Unmarshal([]byte(d.run(t, "show", "-json", "tfplan")), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Without deferral, as before this feature: the data source cannot be read, and says why.
	if code, out := d.exitCode(t, "plan", "-input=false", "-no-color"); code != 1 || !strings.Contains(out, `the connection of cluster "new" is not known yet`) {
		t.Errorf("plan without -allow-deferral: exit %d, want 1 with the data source's error naming the cluster:\n%s", code, out)
	}

	p := plan("-allow-deferral")
	want := map[string]string{"liqo_tenant_namespace.peer": "provider_config_unknown", "data.liqo_cluster.new": "provider_config_unknown"}
	for addr, reason := range want {
		if got := p.deferred()[addr]; got != reason {
			t.Errorf("first plan: %s deferred for %q, want %q (all deferred: %v)", addr, got, reason, p.deferred())
		}
	}
	if got := p.changed(); len(got) != 1 || got[0] != "terraform_data.kubeconfig" {
		t.Errorf("first plan's changes %v, want only terraform_data.kubeconfig (the rest deferred)", got)
	}

	out := d.run(t, "apply", "-input=false", "-auto-approve", "-allow-deferral")
	ns := &corev1.Namespace{}
	err := cluster("provider").Client.Get(t.Context(), client.ObjectKey{Name: "liqo-tenant-" + remoteID}, ns)
	if !apierrors.IsNotFound(err) {
		t.Errorf("after the first apply the deferred tenant namespace exists (%v); its change was to wait:\n%s", err, out)
	}

	out = d.run(t, "apply", "-input=false", "-auto-approve", "-allow-deferral")
	if err := cluster("provider").Client.Get(t.Context(), client.ObjectKey{Name: "liqo-tenant-" + remoteID}, ns); err != nil {
		t.Fatalf("after the second apply, the tenant namespace: %v\n%s", err, out)
	}
	if id := strings.TrimSpace(d.run(t, "output", "-raw", "cluster_id")); id != clusterID {
		t.Errorf("liqo_cluster read after the cluster became known: cluster_id %q, want %q", id, clusterID)
	}
	if code, out := d.exitCode(t, "plan", "-input=false", "-detailed-exitcode", "-allow-deferral"); code != 0 {
		t.Errorf("plan after both applies: exit %d, want 0 (no changes, nothing deferred):\n%s", code, out)
	}
}
