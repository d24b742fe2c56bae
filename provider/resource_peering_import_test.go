package provider_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
)

// TestAccPeeringSandboxImportGateway: a peering whose gateway is not the default one (a
// NodePort Service, another port and MTU, and the address the client dials, as a server behind
// NAT has it: the sandbox forwards the node port on the provider's gateway host) is imported,
// by ID and by identity, with every gateway attribute read back from the clusters, so the plan
// after the import has nothing to change; `terraform plan -generate-config-out` writes that
// gateway. Through the sandbox's gateways (root only).
func TestAccPeeringSandboxImportGateway(t *testing.T) {
	state, clients := networkedSandbox(t)
	block := fmt.Sprintf(`provider "liqo" {
  clusters = {
    consumer = { config_path = %q }
    provider = { config_path = %q }
  }
}
`, filepath.Join(state, "consumer.kubeconfig"), filepath.Join(state, "provider.kubeconfig"))
	peering := fmt.Sprintf(`
resource "liqo_peering" "this" {
  consumer_cluster = "consumer"
  provider_cluster = "provider"
  cpu              = "2"
  memory           = "4Gi"
  pods             = "20"
  gateway = {
    service_type   = "NodePort"
    port           = 51850
    mtu            = 1300
    client_address = %q
  }
}
`, sandbox.HostAddress("provider"))
	const res = "liqo_peering.this"
	gateway := statecheck.ExpectKnownValue(res, tfjsonpath.New("gateway"), knownvalue.ObjectExact(map[string]knownvalue.Check{
		"server_location": knownvalue.StringExact("Provider"), "service_type": knownvalue.StringExact("NodePort"),
		"port": knownvalue.Int64Exact(51850), "node_port": knownvalue.Null(), "load_balancer_ip": knownvalue.Null(),
		"client_address": knownvalue.StringExact(sandbox.HostAddress("provider")), "client_port": knownvalue.Null(),
		"mtu": knownvalue.Int64Exact(1300)}))
	established := statecheck.ExpectKnownValue(res, tfjsonpath.New("status").AtMapKey("networking"), knownvalue.StringExact("Established"))
	c := identityCase{addr: res, identity: map[string]string{"consumer_cluster": "consumer", "provider_cluster": "provider"}}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             func(*terraform.State) error { return nothingLeft(clients) },
		Steps: []resource.TestStep{
			{Config: block + peering, ConfigStateChecks: []statecheck.StateCheck{established, gateway}},
			{
				Config: block + peering, ResourceName: res, ImportState: true, ImportStateId: "consumer/provider",
				ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts"},
			},
			c.importStep(),
		},
	})
	generated := checkGenerateConfig(t, block, peering, []identityCase{c}, nil)
	for _, want := range []string{`service_type\s*=\s*"NodePort"`, `port\s*=\s*51850`, `mtu\s*=\s*1300`,
		`client_address\s*=\s*"` + regexp.QuoteMeta(sandbox.HostAddress("provider")) + `"`} {
		if !regexp.MustCompile(want).MatchString(generated) {
			t.Errorf("the generated configuration has no %s:\n%s", want, generated)
		}
	}
}
