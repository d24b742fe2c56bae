package provider_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
)

// The resource identity tests (Terraform >= 1.12): the shared code, and the single-cluster
// resources; liqo_peering's are in resource_peering_identity_test.go.

// identityCase is a resource of a test configuration and its resource identity.
type identityCase struct {
	addr string
	// identity is the expected identity; "" stands for null (a `cluster` left out: the provider
	// block's own connection).
	identity map[string]string
	// afterImport is what the first plan after an import does besides importing, when it is not
	// a no-op: liqo_identity writes the kubeconfig, which is not imported (update);
	// liqo_consumer_identity issues new credentials, since a private key cannot be imported
	// (replace).
	afterImport plancheck.ResourceActionType
}

// expectIdentity checks the identity of c's resource in the state.
func (c identityCase) expectIdentity() statecheck.StateCheck {
	checks := map[string]knownvalue.Check{}
	for k, v := range c.identity {
		checks[k] = knownvalue.StringExact(v)
		if v == "" {
			checks[k] = knownvalue.Null()
		}
	}
	return statecheck.ExpectIdentity(c.addr, checks)
}

// importStep imports c's resource by its identity in the state (an import block with
// `identity`) and checks the plan: an import that changes nothing (or what afterImport says),
// with the same identity.
func (c identityCase) importStep() resource.TestStep {
	step := resource.TestStep{ResourceName: c.addr, ImportState: true, ImportStateKind: resource.ImportBlockWithResourceIdentity}
	if c.afterImport != "" {
		step.ExpectNonEmptyPlan = true
		step.ImportPlanChecks.PreApply = []plancheck.PlanCheck{plancheck.ExpectResourceAction(c.addr, c.afterImport)}
	}
	return step
}

// wrongImportStep imports c's resource by its identity with attr set to value, which names no
// object: the import must fail with want.
func (c identityCase) wrongImportStep(config, attr, value string, want *regexp.Regexp) resource.TestStep {
	identity := map[string]string{}
	for k, v := range c.identity {
		identity[k] = v
	}
	identity[attr] = value
	return resource.TestStep{
		Config: config + importBlock(c.addr, identity), ResourceName: c.addr, ImportState: true,
		ImportStateKind: resource.ImportBlockWithResourceIdentity, ImportStateConfigExact: true, ExpectError: want,
	}
}

// importBlock is an import block of the resource at addr by identity ("" values left out).
func importBlock(addr string, identity map[string]string) string {
	keys := make([]string, 0, len(identity))
	for k := range identity {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "\nimport {\n  to = %s\n  identity = {\n", addr)
	for _, k := range keys {
		if identity[k] != "" {
			fmt.Fprintf(&b, "    %s = %q\n", k, identity[k])
		}
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

// identityCasesChecks is the identity check of every case.
func identityCasesChecks(cases []identityCase) []statecheck.StateCheck {
	checks := make([]statecheck.StateCheck, len(cases))
	for i, c := range cases {
		checks[i] = c.expectIdentity()
	}
	return checks
}

// ownConnectionProviderBlock configures the consumer test cluster as the provider block's own
// connection, and both test clusters in its clusters map.
func ownConnectionProviderBlock() string {
	return fmt.Sprintf(`
provider "liqo" {
  config_path = %q
  clusters = {
    consumer = { config_path = %q }
    provider = { config_path = %q }
  }
}
`, cluster("consumer").KubeconfigPath, cluster("consumer").KubeconfigPath, cluster("provider").KubeconfigPath)
}

// identityFleet is every single-cluster resource, as the two sides of a peering of cluster
// "<prefix>-consumer" with "<prefix>-provider" have them (the NamespaceOffloading through the
// provider block's own connection, so with a null cluster), and their identities. updated
// changes some attributes in place. The namespace "<prefix>-offloaded" must exist.
func identityFleet(prefix string, updated bool) (string, []identityCase) {
	cid, pid := prefix+"-consumer", prefix+"-provider"
	cns, pns := "liqo-tenant-"+pid, "liqo-tenant-"+cid // the tenant namespaces in the consumer and the provider
	podCIDR, condition, cpu, strategy := "10.243.0.0/16", "Active", "1", "LocalAndRemote"
	if updated {
		podCIDR, condition, cpu, strategy = "10.244.0.0/16", "Cordoned", "2", "Local"
	}
	config := fmt.Sprintf(`
resource "liqo_tenant_namespace" "consumer" {
  cluster           = "consumer"
  remote_cluster_id = %[2]q
}

resource "liqo_tenant_namespace" "provider" {
  cluster           = "provider"
  remote_cluster_id = %[1]q
}

resource "liqo_network_configuration" "consumer" {
  cluster               = "consumer"
  namespace             = liqo_tenant_namespace.consumer.name
  remote_cluster_id     = %[2]q
  remote_pod_cidrs      = [%[4]q]
  remote_external_cidrs = ["10.70.0.0/16"]
}

resource "liqo_gateway_keys" "consumer" {
  cluster           = "consumer"
  namespace         = liqo_tenant_namespace.consumer.name
  remote_cluster_id = %[2]q
}

resource "liqo_gateway_keys" "provider" {
  cluster           = "provider"
  namespace         = liqo_tenant_namespace.provider.name
  remote_cluster_id = %[1]q
}

resource "liqo_public_key" "consumer" {
  cluster           = "consumer"
  namespace         = liqo_tenant_namespace.consumer.name
  remote_cluster_id = %[2]q
  public_key        = liqo_gateway_keys.provider.public_key
}

resource "liqo_public_key" "provider" {
  cluster           = "provider"
  namespace         = liqo_tenant_namespace.provider.name
  remote_cluster_id = %[1]q
  public_key        = liqo_gateway_keys.consumer.public_key
}

resource "liqo_gateway_server" "provider" {
  cluster           = "provider"
  namespace         = liqo_tenant_namespace.provider.name
  remote_cluster_id = %[1]q
  service_type      = "NodePort"
  node_port         = 30761
  mtu               = 1340
  secret_ref        = liqo_gateway_keys.provider.name
}

resource "liqo_gateway_client" "consumer" {
  cluster            = "consumer"
  namespace          = liqo_tenant_namespace.consumer.name
  remote_cluster_id  = %[2]q
  endpoint_addresses = ["172.18.0.3"]
  endpoint_port      = liqo_gateway_server.provider.node_port
  mtu                = 1340
  secret_ref         = liqo_gateway_keys.consumer.name
}

resource "liqo_tenant" "provider" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.provider.name
  consumer_cluster_id = %[1]q
  authz_policy        = "TolerateNoHandshake"
  tenant_condition    = %[5]q
}

resource "liqo_consumer_identity" "provider" {
  cluster             = "provider"
  namespace           = liqo_tenant_namespace.provider.name
  consumer_cluster_id = %[1]q
  validity_hours      = 24
}

resource "liqo_identity" "consumer" {
  cluster                 = "consumer"
  namespace               = liqo_tenant_namespace.consumer.name
  provider_cluster_id     = %[2]q
  remote_tenant_namespace = liqo_tenant_namespace.provider.name
  kubeconfig_wo           = liqo_consumer_identity.provider.kubeconfig
  kubeconfig_wo_version   = 1
}

resource "liqo_resource_slice" "consumer" {
  cluster             = "consumer"
  namespace           = liqo_tenant_namespace.consumer.name
  name                = %[3]q
  provider_cluster_id = %[2]q
  cpu                 = %[6]q
  memory              = "1Gi"
}

resource "liqo_namespace_offloading" "consumer" {
  namespace               = "%[3]s-offloaded"
  pod_offloading_strategy = %[7]q
}
`, cid, pid, prefix, podCIDR, condition, cpu, strategy)
	object := func(addr, clusterKey, namespace, name string) identityCase {
		return identityCase{addr: addr, identity: map[string]string{"cluster": clusterKey, "namespace": namespace, "name": name}}
	}
	identity := object("liqo_identity.consumer", "consumer", cns, "controlplane-"+pid)
	identity.afterImport = plancheck.ResourceActionUpdate
	consumerIdentity := object("liqo_consumer_identity.provider", "provider", pns, "liqo-consumer-"+cid)
	consumerIdentity.afterImport = plancheck.ResourceActionReplace
	return config, []identityCase{
		{addr: "liqo_tenant_namespace.consumer", identity: map[string]string{"cluster": "consumer", "name": cns}},
		{addr: "liqo_tenant_namespace.provider", identity: map[string]string{"cluster": "provider", "name": pns}},
		object("liqo_network_configuration.consumer", "consumer", cns, pid),
		object("liqo_gateway_keys.consumer", "consumer", cns, "gw-keys"),
		object("liqo_gateway_keys.provider", "provider", pns, "gw-keys"),
		object("liqo_public_key.consumer", "consumer", cns, "gw-publickey"),
		object("liqo_public_key.provider", "provider", pns, "gw-publickey"),
		object("liqo_gateway_server.provider", "provider", pns, "server"),
		object("liqo_gateway_client.consumer", "consumer", cns, "client"),
		object("liqo_tenant.provider", "provider", pns, cid),
		consumerIdentity,
		identity,
		object("liqo_resource_slice.consumer", "consumer", cns, prefix),
		{addr: "liqo_namespace_offloading.consumer", identity: map[string]string{"cluster": "", "namespace": prefix + "-offloaded"}},
	}
}

// findCase is the case of the resource at addr.
func findCase(t *testing.T, cases []identityCase, addr string) identityCase {
	t.Helper()
	i := slices.IndexFunc(cases, func(c identityCase) bool { return c.addr == addr })
	if i < 0 {
		t.Fatalf("no identity case for %s", addr)
	}
	return cases[i]
}

// TestAccResourceIdentity: every single-cluster resource has its identity in the state after
// create, the same after an in-place update (Terraform fails an update or a refresh that changes
// it), and can be imported by it (an import block with `identity`, Terraform >= 1.12) with a
// plan that changes nothing but what cannot be imported (liqo_identity's kubeconfig,
// liqo_consumer_identity's credentials). An identity that names no object fails the import: a
// wrong namespace, name or cluster.
func TestAccResourceIdentity(t *testing.T) {
	const prefix = "idn"
	offCreateNamespace(t, "consumer", prefix+"-offloaded")
	block := ownConnectionProviderBlock()
	config, cases := identityFleet(prefix, false)
	updatedConfig, _ := identityFleet(prefix, true)
	config, updatedConfig = block+config, block+updatedConfig
	updated := []string{"liqo_network_configuration.consumer", "liqo_tenant.provider", "liqo_resource_slice.consumer",
		"liqo_namespace_offloading.consumer"}
	updateChecks := make([]plancheck.PlanCheck, len(updated))
	for i, addr := range updated {
		updateChecks[i] = plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)
	}
	steps := []resource.TestStep{
		{Config: config, ConfigStateChecks: identityCasesChecks(cases)},
		{
			Config:            updatedConfig,
			ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: updateChecks},
			ConfigStateChecks: identityCasesChecks(cases),
		},
	}
	for _, c := range cases {
		steps = append(steps, c.importStep())
	}
	notFound := regexp.MustCompile(`Cannot import non-existent remote object`)
	steps = append(steps,
		findCase(t, cases, "liqo_public_key.consumer").wrongImportStep(updatedConfig, "namespace", "liqo-tenant-nowhere",
			regexp.MustCompile(`(?s)Importing PublicKey.*reading PublicKey liqo-tenant-nowhere/gw-publickey in cluster\s+"consumer".*not\s+found`)),
		findCase(t, cases, "liqo_tenant_namespace.provider").wrongImportStep(updatedConfig, "name", "liqo-tenant-nowhere",
			regexp.MustCompile(`(?s)reading Namespace liqo-tenant-nowhere in cluster\s+"provider".*not\s+found`)),
		findCase(t, cases, "liqo_gateway_server.provider").wrongImportStep(updatedConfig, "cluster", "consumer",
			regexp.MustCompile(`(?s)reading GatewayServer liqo-tenant-idn-consumer/server in cluster\s+"consumer".*not\s+found`)),
		findCase(t, cases, "liqo_tenant.provider").wrongImportStep(updatedConfig, "cluster", "nowhere",
			regexp.MustCompile(`(?s)cluster "nowhere" is not a key of the provider's .clusters. map`)),
		findCase(t, cases, "liqo_namespace_offloading.consumer").wrongImportStep(updatedConfig, "namespace", "nowhere", notFound),
		findCase(t, cases, "liqo_identity.consumer").wrongImportStep(updatedConfig, "namespace", "liqo-tenant-nowhere", notFound),
		findCase(t, cases, "liqo_consumer_identity.provider").wrongImportStep(updatedConfig, "name", "nobody", notFound),
	)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy: resource.ComposeTestCheckFunc(
			checkNamespaceGone("consumer", "liqo-tenant-"+prefix+"-provider"),
			checkNamespaceGone("provider", "liqo-tenant-"+prefix+"-consumer"),
		),
		Steps: steps,
	})
}

// TestAccIdentityGenerateConfig imports every single-cluster resource by identity with the
// terraform CLI and `terraform plan -generate-config-out`: the generated configuration plans the
// imports with no change but what cannot be imported (see checkGenerateConfig).
func TestAccIdentityGenerateConfig(t *testing.T) {
	const prefix = "gen"
	offCreateNamespace(t, "consumer", prefix+"-offloaded")
	config, cases := identityFleet(prefix, false)
	checkGenerateConfig(t, ownConnectionProviderBlock(), config, cases, map[string]map[string]string{
		// The kubeconfig is write-only: the one thing to write into the generated configuration.
		"liqo_identity.consumer": {"kubeconfig_wo": "liqo_consumer_identity.provider.kubeconfig", "kubeconfig_wo_version": "1"},
	})
}

// checkGenerateConfig applies config with the terraform CLI (the built provider) in one folder;
// imports its resources by identity (the cases) in another, where `terraform plan
// -generate-config-out` writes their configuration; adds what fill gives by address (what the
// practitioner must write: values that cannot be imported); checks that the plan imports every
// resource, changing nothing but what the cases' afterImport say; applies it; checks that the
// next plan is empty; and destroys what it imported. It returns the generated configuration.
func checkGenerateConfig(t *testing.T, providerBlock, config string, cases []identityCase, fill map[string]map[string]string) string {
	t.Helper()
	// The provider's source, for the CLI (resource.Test writes its own).
	providerBlock = requiredProvidersBlock + providerBlock
	created := newTerraformDir(t, tfSource(t, providerBlock+config))
	args := []string{"-input=false", "-no-color"}
	created.run(t, append([]string{"apply", "-auto-approve"}, args...)...)
	t.Cleanup(func() { // when the imports failed; else nothing is left to destroy
		if out, err := created.command(append([]string{"destroy", "-auto-approve"}, args...)...).CombinedOutput(); err != nil {
			t.Errorf("destroying what the test made: %v\n%s", err, out)
		}
	})

	var imports strings.Builder
	for _, c := range cases {
		imports.WriteString(importBlock(c.addr, c.identity))
	}
	tf := newTerraformDir(t, tfSource(t, providerBlock+imports.String()))
	// The plan fails when the generated configuration misses a required value (fill).
	_, out := tf.exitCode(t, append([]string{"plan", "-generate-config-out=generated.tf"}, args...)...)
	generatedPath := filepath.Join(tf.dir, "generated.tf")
	data, err := os.ReadFile(generatedPath)
	if err != nil {
		t.Fatalf("terraform wrote no generated.tf: %v\n%s", err, out)
	}
	generated := string(data)
	t.Logf("generated.tf:\n%s", generated)
	for _, c := range cases {
		typ, name, _ := strings.Cut(c.addr, ".")
		if !strings.Contains(generated, fmt.Sprintf("resource %q %q {", typ, name)) {
			t.Errorf("generated.tf has no configuration of %s", c.addr)
		}
	}
	for addr, values := range fill {
		typ, name, _ := strings.Cut(addr, ".")
		open := fmt.Sprintf("resource %q %q {\n", typ, name)
		start := strings.Index(generated, open)
		if start < 0 {
			t.Fatalf("generated.tf has no configuration of %s to fill in", addr)
		}
		end := start + strings.Index(generated[start:], "\n}\n")
		block := generated[start:end]
		for attr, value := range values {
			// Terraform writes a value it cannot import as null: replace it.
			line := regexp.MustCompile(`(?m)^(\s*)` + attr + `\s*=.*$`)
			if !line.MatchString(block) {
				t.Fatalf("generated.tf's %s has no %s to fill in:\n%s", addr, attr, block)
			}
			block = line.ReplaceAllString(block, "${1}"+attr+" = "+value)
		}
		generated = generated[:start] + block + generated[end:]
	}
	if err := os.WriteFile(generatedPath, []byte(generated), 0o600); err != nil {
		t.Fatal(err)
	}

	if code, out := tf.exitCode(t, append([]string{"plan", "-out=imports.tfplan", "-detailed-exitcode"}, args...)...); code != 2 {
		t.Fatalf("plan of the imports: exit %d, want 2 (imports)\n%s", code, out)
	}
	checkImportPlan(t, tf.run(t, "show", "-json", "imports.tfplan"), cases)
	tf.run(t, append([]string{"apply"}, append(args, "imports.tfplan")...)...)
	if code, out := tf.exitCode(t, append([]string{"plan", "-detailed-exitcode"}, args...)...); code != 0 {
		t.Errorf("plan after the imports: exit %d, want 0 (no changes)\n%s", code, out)
	}
	tf.run(t, append([]string{"destroy", "-auto-approve"}, args...)...)
	return generated
}

// planResourceChange is what checkImportPlan reads of a resource change of a JSON plan.
type planResourceChange struct {
	Address string `json:"address"`
	Change  struct {
		Actions   []string `json:"actions"`
		Importing *struct {
			Identity map[string]any `json:"identity"`
		} `json:"importing"`
	} `json:"change"`
}

// checkImportPlan checks a JSON plan: every case's resource is imported by its identity, and
// changed only as its afterImport says.
func checkImportPlan(t *testing.T, planJSON string, cases []identityCase) {
	t.Helper()
	var plan struct {
		ResourceChanges []planResourceChange `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(planJSON), &plan); err != nil {
		t.Fatalf("reading the plan: %v", err)
	}
	want := map[plancheck.ResourceActionType][]string{
		"":                              {"no-op"},
		plancheck.ResourceActionUpdate:  {"update"},
		plancheck.ResourceActionReplace: {"delete", "create"},
	}
	for _, c := range cases {
		i := slices.IndexFunc(plan.ResourceChanges, func(rc planResourceChange) bool { return rc.Address == c.addr })
		if i < 0 {
			t.Errorf("the plan does not change %s", c.addr)
			continue
		}
		ch := plan.ResourceChanges[i].Change
		if ch.Importing == nil {
			t.Errorf("%s is not imported", c.addr)
		} else {
			for k, v := range c.identity {
				if got, _ := ch.Importing.Identity[k].(string); got != v {
					t.Errorf("%s is imported with identity %v, want %s = %q", c.addr, ch.Importing.Identity, k, v)
				}
			}
		}
		actions := slices.Clone(ch.Actions)
		sort.Sort(sort.Reverse(sort.StringSlice(actions))) // delete, create: either order of a replacement
		if !slices.Equal(actions, want[c.afterImport]) {
			t.Errorf("%s: actions %v after the import, want %v", c.addr, ch.Actions, want[c.afterImport])
		}
	}
}

// tfSource writes a configuration into a new folder, for newTerraformDir.
func tfSource(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
