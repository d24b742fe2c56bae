package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	tfprovider "github.com/hashicorp/terraform-plugin-framework/provider"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offloadingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/provider"
)

// The list resource tests (Terraform >= 1.14, `terraform query`): objects made outside
// Terraform, by the test through the API as liqoctl would make them, are listed with the
// identity of their managed resource, and `terraform query -generate-config-out` writes import
// blocks and configuration that import them with no change.

// listFixture makes, through the API, what a liqoctl peering of "<prefix>-consumer" with
// "<prefix>-provider" leaves besides the network: in the provider, its tenant namespace with the
// consumer's Tenant (keys exchanged) and a second consumer's Tenant in its own (no handshake); in
// the consumer, its tenant namespace with the ResourceSlice for the provider, and a copy
// replicated from a consumer of its own (not a slice the consumer manages); and the namespace
// "<prefix>-offloaded" offloaded through a NamespaceOffloading. It returns the identities of
// what the lists must find, by list block (the provider's tenants, the consumer's slices, its
// offloadings); the NamespaceOffloading is in the provider block's own connection
// (ownConnectionProviderBlock), so with a null cluster.
func listFixture(t *testing.T, prefix string) map[string][]identityCase {
	t.Helper()
	ctx := context.Background()
	cid, pid, other := prefix+"-consumer", prefix+"-provider", prefix+"-other"
	pns, otherNS, cns := consts.TenantNamespace(cid), consts.TenantNamespace(other), consts.TenantNamespace(pid)
	create := func(clusterName string, obj client.Object) {
		t.Helper()
		c := cluster(clusterName).Client
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s in %s: %v", obj, client.ObjectKeyFromObject(obj), clusterName, err)
		}
	}
	for clusterName, namespaces := range map[string][]string{"provider": {pns, otherNS}, "consumer": {cns, prefix + "-offloaded"}} {
		for _, ns := range namespaces {
			offCreateNamespace(t, clusterName, ns)
		}
	}
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: pns, Name: cid}}
	forge.MutateTenant(tenant, cid, forge.TenantOptions{AuthzPolicy: authv1beta1.KeysExchange, Condition: authv1beta1.TenantConditionActive,
		PublicKey: []byte("consumer public key"), Signature: []byte("signed nonce")})
	create("provider", tenant)
	otherTenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: other}}
	forge.MutateTenant(otherTenant, other, forge.TenantOptions{AuthzPolicy: authv1beta1.TolerateNoHandshake,
		Condition: authv1beta1.TenantConditionCordoned})
	create("provider", otherTenant)
	slice := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: cns, Name: pid}}
	forge.MutateResourceSlice(slice, pid, forge.ResourceSliceOptions{ConsumerID: cid, Class: authv1beta1.ResourceSliceClassDefault,
		Resources:         corev1.ResourceList{corev1.ResourceCPU: kresource.MustParse("2"), corev1.ResourceMemory: kresource.MustParse("4Gi")},
		CreateVirtualNode: true})
	create("consumer", slice)
	replicated := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: cns, Name: "from-" + other,
		Labels: map[string]string{consts.ReplicatedLabel: "true", consts.ReplicationOriginLabel: other}}}
	forge.MutateResourceSlice(replicated, cid, forge.ResourceSliceOptions{ConsumerID: other})
	replicated.Labels[consts.ReplicationLabel] = "false"
	create("consumer", replicated)
	create("consumer", &offloadingv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Namespace: prefix + "-offloaded", Name: "offloading"},
		Spec: offloadingv1beta1.NamespaceOffloadingSpec{NamespaceMappingStrategy: offloadingv1beta1.DefaultNameMappingStrategyType,
			PodOffloadingStrategy: offloadingv1beta1.RemotePodOffloadingStrategyType}})
	object := func(addr, clusterKey, namespace, name string) identityCase {
		return identityCase{addr: addr, identity: map[string]string{"cluster": clusterKey, "namespace": namespace, "name": name}}
	}
	return map[string][]identityCase{
		"liqo_tenant.provider":         {object("liqo_tenant.provider", "provider", pns, cid), object("liqo_tenant.provider", "provider", otherNS, other)},
		"liqo_resource_slice.consumer": {object("liqo_resource_slice.consumer", "consumer", cns, pid)},
		"liqo_namespace_offloading.consumer": {{addr: "liqo_namespace_offloading.consumer",
			identity: map[string]string{"cluster": "", "namespace": prefix + "-offloaded"}}},
	}
}

// listBlocks are list blocks of the fixture's objects: the tenants of the provider in the
// fixture's two tenant namespaces, the slices of the consumer in its tenant namespace, the
// offloading of the fixture's namespace through the provider block's own connection; more is
// added to each block's config.
func listBlocks(prefix string, includeResource bool, more map[string]string) string {
	blocks := []struct{ typ, label, config string }{
		{"liqo_tenant", "provider", `cluster = "provider"`},
		{"liqo_resource_slice", "consumer", fmt.Sprintf("cluster = \"consumer\"\n    namespace = %q", consts.TenantNamespace(prefix+"-provider"))},
		{"liqo_namespace_offloading", "consumer", fmt.Sprintf("namespace = %q", prefix+"-offloaded")},
	}
	var b strings.Builder
	for _, l := range blocks {
		addr := l.typ + "." + l.label
		fmt.Fprintf(&b, "list %q %q {\n  provider         = liqo\n  include_resource = %t\n  config {\n    %s\n", l.typ, l.label, includeResource, l.config)
		if more[addr] != "" {
			fmt.Fprintf(&b, "    %s\n", more[addr])
		}
		b.WriteString("  }\n}\n\n")
	}
	return b.String()
}

// identityChecks is the querycheck of each case's identity among the results of its address.
func identityChecks(cases []identityCase) []querycheck.QueryResultCheck {
	var checks []querycheck.QueryResultCheck
	for _, c := range cases {
		checks = append(checks, querycheck.ExpectIdentity(c.addr, identityValues(c.identity)))
	}
	return checks
}

// identityValues are the knownvalue checks of an identity ("" for null).
func identityValues(identity map[string]string) map[string]knownvalue.Check {
	checks := map[string]knownvalue.Check{}
	for k, v := range identity {
		checks[k] = knownvalue.StringExact(v)
		if v == "" {
			checks[k] = knownvalue.Null()
		}
	}
	return checks
}

// TestAccListObjects: the list resources of liqo_tenant, liqo_resource_slice and
// liqo_namespace_offloading find the objects made outside Terraform, with their resource's
// identity (a null cluster for the provider block's own connection) and a display name; the
// replicated copy of a slice is not listed; the filters (namespace, cluster IDs) and limit keep
// what they say; with include_resource, the results carry the state an import would read. An
// unknown cluster key and an unreachable cluster fail with the config attribute to fix.
func TestAccListObjects(t *testing.T) {
	const prefix = "lsq"
	cases := listFixture(t, prefix)
	block := ownConnectionProviderBlock()
	tenants, slices, offloadings := cases["liqo_tenant.provider"], cases["liqo_resource_slice.consumer"], cases["liqo_namespace_offloading.consumer"]
	// Only the fixture's tenants: the shared cluster may hold other tests' tenants.
	inFixture := map[string]string{"liqo_tenant.provider": fmt.Sprintf("consumer_cluster_id = %q", prefix+"-consumer")}
	checks := append(identityChecks(tenants[:1]), identityChecks(slices)...)
	checks = append(checks, identityChecks(offloadings)...)
	checks = append(checks,
		querycheck.ExpectLength("liqo_tenant.provider", 1),
		querycheck.ExpectLength("liqo_resource_slice.consumer", 1), // not the replicated copy
		querycheck.ExpectLength("liqo_namespace_offloading.consumer", 1),
		querycheck.ExpectResourceDisplayName("liqo_resource_slice.consumer", queryfilter.ByResourceIdentity(identityValues(slices[0].identity)),
			knownvalue.StringExact(fmt.Sprintf("consumer/liqo-tenant-%[1]s-provider/%[1]s-provider (provider %[1]s-provider)", prefix))),
		querycheck.ExpectResourceDisplayName("liqo_namespace_offloading.consumer", queryfilter.ByResourceIdentity(identityValues(offloadings[0].identity)),
			knownvalue.StringExact(prefix+"-offloaded (pods Remote)")),
	)
	known := func(addr string, identity map[string]string, values map[string]knownvalue.Check) querycheck.QueryResultCheck {
		var kv []querycheck.KnownValueCheck
		for k, v := range values {
			kv = append(kv, querycheck.KnownValueCheck{Path: tfjsonpath.New(k), KnownValue: v})
		}
		return querycheck.ExpectResourceKnownValues(addr, queryfilter.ByResourceIdentity(identityValues(identity)), kv)
	}
	resourceChecks := []querycheck.QueryResultCheck{
		known("liqo_tenant.provider", tenants[0].identity, map[string]knownvalue.Check{
			"id":                  knownvalue.StringExact(fmt.Sprintf("provider/liqo-tenant-%[1]s-consumer/%[1]s-consumer", prefix)),
			"consumer_cluster_id": knownvalue.StringExact(prefix + "-consumer"),
			"authz_policy":        knownvalue.StringExact("KeysExchange"),
			"public_key":          knownvalue.StringExact("Y29uc3VtZXIgcHVibGljIGtleQ=="),
		}),
		known("liqo_resource_slice.consumer", slices[0].identity, map[string]knownvalue.Check{
			"provider_cluster_id": knownvalue.StringExact(prefix + "-provider"),
			"cpu":                 knownvalue.StringExact("2"),
			"memory":              knownvalue.StringExact("4Gi"),
			"create_virtual_node": knownvalue.Bool(true),
		}),
		known("liqo_namespace_offloading.consumer", offloadings[0].identity, map[string]knownvalue.Check{
			"id":                      knownvalue.StringExact(prefix + "-offloaded"),
			"cluster":                 knownvalue.Null(),
			"pod_offloading_strategy": knownvalue.StringExact("Remote"),
		}),
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{
			{Config: block}, // the provider block the queries use
			{Query: true, Config: listBlocks(prefix, false, inFixture), QueryResultChecks: checks},
			{Query: true, Config: listBlocks(prefix, true, inFixture), QueryResultChecks: resourceChecks},
			{
				// The fixture's other tenant, by its namespace.
				Query:  true,
				Config: listBlocks(prefix, false, map[string]string{"liqo_tenant.provider": fmt.Sprintf("namespace = %q", tenants[1].identity["namespace"])}),
				QueryResultChecks: append(identityChecks(tenants[1:]),
					querycheck.ExpectLength("liqo_tenant.provider", 1),
					querycheck.ExpectResourceDisplayName("liqo_tenant.provider", queryfilter.ByResourceIdentity(identityValues(tenants[1].identity)),
						knownvalue.StringExact(fmt.Sprintf("provider/liqo-tenant-%[1]s-other/%[1]s-other (consumer %[1]s-other)", prefix))),
				),
			},
			{
				Query: true,
				Config: listBlocks(prefix, false, map[string]string{"liqo_resource_slice.consumer": fmt.Sprintf("provider_cluster_id = %q", "nobody")}) +
					`list "liqo_tenant" "limit" {
  provider = liqo
  limit    = 1
  config {
    cluster = "provider"
  }
}
`,
				QueryResultChecks: []querycheck.QueryResultCheck{
					querycheck.ExpectLength("liqo_resource_slice.consumer", 0),
					querycheck.ExpectLength("liqo_tenant.limit", 1),
				},
			},
			{
				Query:       true,
				Config:      `list "liqo_tenant" "x" {` + "\n  provider = liqo\n  config {\n    cluster = \"nowhere\"\n  }\n}\n",
				ExpectError: regexp.MustCompile(`(?s)Listing Tenants.*config.cluster = "nowhere": cluster "nowhere" is not a key of\s+the\s+provider's .clusters. map`),
			},
			{Config: block + unreachableClusterBlock()},
			{
				Query:       true,
				Config:      `list "liqo_resource_slice" "x" {` + "\n  provider = liqo.unreachable\n  config {\n    cluster = \"gone\"\n  }\n}\n",
				ExpectError: regexp.MustCompile(`(?s)config.cluster = "gone": cannot reach the API server of cluster "gone"`),
			},
		},
	})
}

// unreachableClusterBlock is a provider alias "unreachable" whose cluster "gone" has no API
// server.
func unreachableClusterBlock() string {
	return `
provider "liqo" {
  alias = "unreachable"
  clusters = {
    gone = { host = "https://127.0.0.1:1", insecure = true, token = "x" }
  }
}
`
}

// TestAccListGenerateConfig runs `terraform query -generate-config-out` with the terraform CLI
// over the objects made outside Terraform: the generated import blocks and configuration plan
// the import of each object listed, by its identity, with no change; applied, the next plan is
// empty.
func TestAccListGenerateConfig(t *testing.T) {
	const prefix = "lsg"
	fixture := listFixture(t, prefix)
	// The consumer's tenant only (the filter): the shared cluster may hold other tests' tenants.
	cases := slices.Concat(fixture["liqo_tenant.provider"][:1], fixture["liqo_resource_slice.consumer"],
		fixture["liqo_namespace_offloading.consumer"])
	checkQueryGenerateConfig(t, ownConnectionProviderBlock(), listBlocks(prefix, false, map[string]string{
		"liqo_tenant.provider": fmt.Sprintf("consumer_cluster_id = %q", prefix+"-consumer"),
	}), cases)
}

// checkQueryGenerateConfig writes the provider block and the query (list blocks) in a folder,
// runs `terraform query -generate-config-out`, checks that the generated configuration imports
// exactly the cases (by identity, the resource type of each case's address) and that the plan
// imports them with no change; applies it, checks that the next plan is empty, and destroys
// what it imported, which Terraform now manages.
func checkQueryGenerateConfig(t *testing.T, providerBlock, query string, cases []identityCase) {
	t.Helper()
	tf := newTerraformDir(t, tfSource(t, requiredProvidersBlock+providerBlock))
	if err := os.WriteFile(filepath.Join(tf.dir, "query.tfquery.hcl"), []byte(query), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-input=false", "-no-color"}
	out := tf.run(t, append([]string{"query", "-generate-config-out=generated.tf"}, args[1:]...)...)
	t.Logf("terraform query:\n%s", out)
	data, err := os.ReadFile(filepath.Join(tf.dir, "generated.tf"))
	if err != nil {
		t.Fatalf("terraform query wrote no generated.tf: %v\n%s", err, out)
	}
	t.Logf("generated.tf:\n%s", data)

	if code, out := tf.exitCode(t, append([]string{"plan", "-out=imports.tfplan", "-detailed-exitcode"}, args...)...); code != 2 {
		t.Fatalf("plan of the imports: exit %d, want 2 (imports)\n%s", code, out)
	}
	imported := importedIdentities(t, tf.run(t, "show", "-json", "imports.tfplan"))
	var want []string
	for _, c := range cases {
		typ, _, _ := strings.Cut(c.addr, ".")
		want = append(want, identityKey(typ, c.identity))
	}
	sort.Strings(want)
	if !slices.Equal(imported, want) {
		t.Errorf("the plan imports, with no change:\n  %s\nwant:\n  %s", strings.Join(imported, "\n  "), strings.Join(want, "\n  "))
	}
	tf.run(t, append([]string{"apply"}, append(args, "imports.tfplan")...)...)
	if code, out := tf.exitCode(t, append([]string{"plan", "-detailed-exitcode"}, args...)...); code != 0 {
		t.Errorf("plan after the imports: exit %d, want 0 (no changes)\n%s", code, out)
	}
	tf.run(t, append([]string{"destroy", "-auto-approve"}, args...)...)
}

// importedIdentities reads a JSON plan: the resources it imports with no other change, as
// identityKey; a resource it changes otherwise fails the test.
func importedIdentities(t *testing.T, planJSON string) []string {
	t.Helper()
	var plan struct {
		ResourceChanges []planResourceChange `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(planJSON), &plan); err != nil {
		t.Fatalf("reading the plan: %v", err)
	}
	var out []string
	for _, rc := range plan.ResourceChanges {
		switch {
		case rc.Change.Importing == nil:
			t.Errorf("%s is not imported: %v", rc.Address, rc.Change.Actions)
		case !slices.Equal(rc.Change.Actions, []string{"no-op"}):
			t.Errorf("%s is imported, then changed: %v", rc.Address, rc.Change.Actions)
		default:
			identity := map[string]string{}
			for k, v := range rc.Change.Importing.Identity {
				s, _ := v.(string)
				identity[k] = s
			}
			typ, _, _ := strings.Cut(rc.Address, ".")
			out = append(out, identityKey(typ, identity))
		}
	}
	sort.Strings(out)
	return out
}

// identityKey renders a resource type and an identity ("" values left out) as one string.
func identityKey(typ string, identity map[string]string) string {
	var parts []string
	for k, v := range identity {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	sort.Strings(parts)
	return typ + " {" + strings.Join(parts, ", ") + "}"
}

// TestListExamples: every list resource has an example
// (examples/list-resources/<type>/list-resource.tfquery.hcl, rendered in docs/) that lists that
// type and that `terraform validate -query` finds valid with the built provider, formatted as
// `terraform fmt` writes HCL.
func TestListExamples(t *testing.T) {
	ctx := t.Context()
	var types []string
	for _, newList := range provider.New("test")().(tfprovider.ProviderWithListResources).ListResources(ctx) {
		var meta fwresource.MetadataResponse
		newList().Metadata(ctx, fwresource.MetadataRequest{ProviderTypeName: "liqo"}, &meta)
		types = append(types, meta.TypeName)
	}
	dirs, err := filepath.Glob(filepath.Join("..", "examples", "list-resources", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var examples []string
	for _, d := range dirs {
		examples = append(examples, filepath.Base(d))
	}
	sort.Strings(types)
	if !slices.Equal(examples, types) {
		t.Errorf("examples/list-resources has %v, the list resources are %v", examples, types)
	}
	var clusters strings.Builder
	for _, key := range []string{"consumer", "provider", "hub", "edge-1", "edge-2"} {
		fmt.Fprintf(&clusters, "    %q = { config_path = \"/nonexistent/%s\" }\n", key, key)
	}
	block := fmt.Sprintf("provider \"liqo\" {\n  config_path = \"/nonexistent/own\"\n  clusters = {\n%s  }\n}\n", clusters.String())
	for _, typ := range types {
		t.Run(typ, func(t *testing.T) {
			example, err := os.ReadFile(filepath.Join("..", "examples", "list-resources", typ, "list-resource.tfquery.hcl"))
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`(?m)^list "` + typ + `" `).Match(example) {
				t.Errorf("the example lists no %s:\n%s", typ, example)
			}
			tf := newTerraformDir(t, tfSource(t, requiredProvidersBlock+block))
			if err := os.WriteFile(filepath.Join(tf.dir, "example.tfquery.hcl"), example, 0o600); err != nil {
				t.Fatal(err)
			}
			// terraform fmt takes no .tfquery.hcl file; the syntax is the same.
			fmtCheck := filepath.Join(t.TempDir(), "example.tf")
			if err := os.WriteFile(fmtCheck, example, 0o600); err != nil {
				t.Fatal(err)
			}
			tf.run(t, "fmt", "-check", "-diff", "-no-color", fmtCheck)
			if out := tf.run(t, "validate", "-query", "-no-color"); !strings.Contains(out, "The configuration is valid") {
				t.Errorf("terraform validate -query:\n%s", out)
			}
		})
	}
}
