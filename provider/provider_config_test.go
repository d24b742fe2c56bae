package provider_test

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// tenantNamespaceIn is a resource that needs a working connection to the named cluster.
func tenantNamespaceIn(cluster, remoteID string) string {
	attr := ""
	if cluster != "" {
		attr = fmt.Sprintf("cluster = %q", cluster)
	}
	return fmt.Sprintf(`
resource "liqo_tenant_namespace" "t" {
  %s
  remote_cluster_id = %q
}
`, attr, remoteID)
}

// TestAccProviderBadInputs: each bad configuration fails at validate/plan time or, for what
// only a connection can tell, at apply, with a message naming the problem and the fix.
func TestAccProviderBadInputs(t *testing.T) {
	kc := cluster("consumer").KubeconfigPath
	data, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	// A server that accepts connections and never answers: the provider must give up in bounded time.
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hung.Close() })
	go func() {
		for {
			conn, err := hung.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()

	cases := []struct {
		name   string
		config string
		want   string
	}{
		{"kubeconfig and config_path", fmt.Sprintf(`provider "liqo" {
  config_path = %q
  kubeconfig  = %q
}`, kc, string(data)) + tenantNamespaceIn("", "cl-x"), "`kubeconfig` and `config_path` both give a kubeconfig: set one of\\s+them"},
		{"token and client certificate", `provider "liqo" {
  host               = "https://127.0.0.1:6443"
  token              = "abc"
  client_certificate = "cert"
  client_key         = "key"
}` + tenantNamespaceIn("", "cl-x"), "`token` and `client_certificate`/`client_key` are two credentials"},
		{"certificate without key", `provider "liqo" {
  host               = "https://127.0.0.1:6443"
  client_certificate = "cert"
}` + tenantNamespaceIn("", "cl-x"), "`client_certificate` and `client_key` go together: set both"},
		{"insecure with a CA", `provider "liqo" {
  host                   = "https://127.0.0.1:6443"
  insecure               = true
  cluster_ca_certificate = "ca"
}` + tenantNamespaceIn("", "cl-x"), "`insecure = true` skips the verification that\\s+`cluster_ca_certificate` is\\s+for"},
		{"host not a URL", `provider "liqo" {
  host = "127.0.0.1"
}` + tenantNamespaceIn("", "cl-x"), "`host` \"127.0.0.1\" is not a URL"},
		{"context without kubeconfig", `provider "liqo" {
  clusters = {
    edge = { config_context = "edge" }
  }
}` + tenantNamespaceIn("edge", "cl-x"), `(?s)cluster "edge".*select from a kubeconfig: set\s+` + "`config_path`"},
		{"unknown cluster key", providerBlock() + tenantNamespaceIn("consumr", "cl-x"),
			`cluster "consumr" is not a key of the provider's ` + "`clusters`" + `\s+map\s+\(valid\s+keys:\s+"consumer",\s+"provider"\)`},
		{"no connection at all", `provider "liqo" {}` + tenantNamespaceIn("", "cl-x"),
			"the liqo provider has no connection: set `config_path`, `kubeconfig` or\\s+`host`"},
		{"default connection missing", providerBlock() + tenantNamespaceIn("", "cl-x"),
			"the provider block has no connection of its own: set `cluster` to one of\\s+\"consumer\", \"provider\""},
		{"cluster ID not a DNS label", providerBlock() + tenantNamespaceIn("consumer", "Cluster_One"),
			"must be a DNS label"},
		{"unreachable API server", `provider "liqo" {
  clusters = {
    down = { host = "https://127.0.0.1:1", insecure = true, token = "x" }
  }
}` + tenantNamespaceIn("down", "cl-x"), `cannot reach the API server of cluster "down" at\s+https://127.0.0.1:1`},
		{"API server that never answers", fmt.Sprintf(`provider "liqo" {
  clusters = {
    hung = { host = "https://%s", insecure = true, token = "x" }
  }
}`, hung.Addr()) + tenantNamespaceIn("hung", "cl-x"), `cannot reach the API server of cluster "hung" at\s+https://` + regexp.QuoteMeta(hung.Addr().String())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6Providers,
				Steps: []resource.TestStep{{
					Config:      tc.config,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
			if d := time.Since(start); d > time.Minute {
				t.Errorf("took %v to fail, want a bounded failure", d)
			}
		})
	}
}

// TestAccUnknownConnectionPlans: a connection that is only known after another resource is
// applied (a cluster created in the same apply) plans with unknown values instead of failing,
// and the apply then uses it.
func TestAccUnknownConnectionPlans(t *testing.T) {
	kc := cluster("provider").KubeconfigPath
	config := fmt.Sprintf(`
resource "terraform_data" "cluster" {
  input = file(%q)
}

provider "liqo" {
  clusters = {
    later = { kubeconfig = terraform_data.cluster.output }
  }
}
`, kc) + tenantNamespaceIn("later", "cl-later")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: func(s *terraform.State) error {
			return checkNamespaceGone("provider", "liqo-tenant-cl-later")(s)
		},
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction("liqo_tenant_namespace.t", plancheck.ResourceActionCreate),
			}},
			Check: checkNamespaceLabel("provider", "liqo-tenant-cl-later", "liqo.io/remote-cluster-id", "cl-later"),
		}},
	})
}
