package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

const dnsDomain = "clusters.example.com"

// dnsService is the DNS-SD service name the tests publish under.
const dnsService = "_liqo._tcp." + dnsDomain

// dnsPublish adds an instance with one SRV record and a TXT record.
func dnsPublish(s *testenv.DNSServer, name, host string, port uint16, txt ...string) {
	inst := name + "." + dnsService
	s.AddPTR(dnsService, inst)
	s.AddSRV(inst, 0, 0, port, host)
	s.AddTXT(inst, txt...)
}

// dnsDiscoveryConfig is a discovery of dnsDomain at nameserver, with extra attributes.
func dnsDiscoveryConfig(nameserver, extra string) string {
	return fmt.Sprintf(`
provider "liqo" {}

data "liqo_dns_discovery" "d" {
  domain     = %q
  nameserver = %q
%s
}
`, dnsDomain, nameserver, extra)
}

// dnsEndpoint is the expected value of one element of endpoints.
func dnsEndpoint(host string, port, priority, weight int64) knownvalue.Check {
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		"host": knownvalue.StringExact(host), "port": knownvalue.Int64Exact(port),
		"api_server_url": knownvalue.StringExact(fmt.Sprintf("https://%s:%d", host, port)),
		"priority":       knownvalue.Int64Exact(priority), "weight": knownvalue.Int64Exact(weight),
	})
}

// dnsCluster is the expected value of one element of clusters, its preferred endpoint first.
func dnsCluster(name, id string, txt map[string]string, endpoints ...[4]any) knownvalue.Check {
	txtChecks := map[string]knownvalue.Check{}
	for k, v := range txt {
		txtChecks[k] = knownvalue.StringExact(v)
	}
	var eps []knownvalue.Check
	for _, e := range endpoints {
		eps = append(eps, dnsEndpoint(e[0].(string), int64(e[1].(int)), int64(e[2].(int)), int64(e[3].(int))))
	}
	best := endpoints[0]
	port := int64(best[1].(int))
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		"name": knownvalue.StringExact(name), "cluster_id": knownvalue.StringExact(id),
		"host": knownvalue.StringExact(best[0].(string)), "port": knownvalue.Int64Exact(port),
		"api_server_url": knownvalue.StringExact(fmt.Sprintf("https://%s:%d", best[0], port)),
		"priority":       knownvalue.Int64Exact(int64(best[2].(int))), "weight": knownvalue.Int64Exact(int64(best[3].(int))),
		"txt": knownvalue.MapExact(txtChecks), "endpoints": knownvalue.ListExact(eps),
	})
}

// TestAccDNSDiscoveryDataSource reads clusters published in an in-process DNS server through
// the real terraform binary: the list and its order, a cluster published later, a domain with
// nothing published, a broken instance and a nameserver that does not answer.
func TestAccDNSDiscoveryDataSource(t *testing.T) {
	const addr = "data.liqo_dns_discovery.d"
	s := testenv.NewDNSServer(t)
	dnsPublish(s, "rome", "api.rome.example.com", 6443, "cluster-id=cl-rome", "pod-cidr=10.1.0.0/16", "Zone=eu")
	turin := "turin." + dnsService
	s.AddPTR(dnsService, turin)
	s.AddSRV(turin, 20, 0, 6443, "backup.turin.example.com")
	s.AddSRV(turin, 10, 5, 6443, "b.turin.example.com")
	s.AddSRV(turin, 10, 50, 7443, "a.turin.example.com")
	s.AddTXT(turin, "cluster-id=cl-turin", "cluster-id=cl-ignored", "gpu")
	rome := dnsCluster("rome", "cl-rome", map[string]string{"cluster-id": "cl-rome", "pod-cidr": "10.1.0.0/16", "zone": "eu"},
		[4]any{"api.rome.example.com", 6443, 0, 0})
	turinCheck := dnsCluster("turin", "cl-turin", map[string]string{"cluster-id": "cl-turin", "gpu": ""},
		[4]any{"a.turin.example.com", 7443, 10, 50}, [4]any{"b.turin.example.com", 6443, 10, 5},
		[4]any{"backup.turin.example.com", 6443, 20, 0})

	silent := testenv.NewDNSServer(t)
	silent.SetSilent(true)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{{
			Config: dnsDiscoveryConfig(s.Addr, ""),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("clusters"), knownvalue.ListExact([]knownvalue.Check{rome, turinCheck})),
			},
		}, {
			// A cluster published since: listed in name order at the next read.
			PreConfig: func() { dnsPublish(s, "milan", "api.milan.example.com", 443, "cluster-id=cl-milan") },
			Config:    dnsDiscoveryConfig(s.Addr, ""),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("clusters"), knownvalue.ListExact([]knownvalue.Check{
					dnsCluster("milan", "cl-milan", map[string]string{"cluster-id": "cl-milan"}, [4]any{"api.milan.example.com", 443, 0, 0}),
					rome, turinCheck,
				})),
			},
		}, {
			// Another service type: nothing published there, an empty list (and a warning).
			Config: dnsDiscoveryConfig(s.Addr, `  service = "_other._tcp"`),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("clusters"), knownvalue.ListExact([]knownvalue.Check{})),
			},
		}, {
			// An instance without its TXT record: an error naming it, the record and the fix.
			PreConfig: func() {
				s.AddPTR(dnsService, "broken."+dnsService)
				s.AddSRV("broken."+dnsService, 0, 0, 6443, "api.broken.example.com")
			},
			Config: dnsDiscoveryConfig(s.Addr, ""),
			ExpectError: offWrappedText("Discovering clusters under "+dnsDomain, `instance "broken"`,
				"(broken."+dnsService+".): no TXT record", "publish one with the cluster's ID, e.g.",
				"broken."+dnsService+`. TXT "cluster-id=<cluster ID>"`),
		}, {
			// A nameserver that never answers: an error naming it and the domain, after timeout.
			Config: dnsDiscoveryConfig(silent.Addr, `  timeout = "1s"`),
			ExpectError: offWrappedText("Discovering clusters under "+dnsDomain, "asking for the PTR records of "+dnsService+".",
				"(domain "+dnsDomain+"): nameserver "+silent.Addr+": no answer in time", "timeout 1s reached",
				"check that the nameserver answers"),
		}},
	})
}

// TestAccDNSDiscoveryValidation rejects malformed arguments at plan time, before any lookup.
func TestAccDNSDiscoveryValidation(t *testing.T) {
	s := testenv.NewDNSServer(t)
	ns := fmt.Sprintf("nameserver = %q\n", s.Addr)
	for _, tc := range []struct {
		name, attrs string
		want        []string
	}{
		{"domain-url", ns + `domain = "https://clusters.example.com"`,
			[]string{"Invalid DNS domain", `"https://clusters.example.com" is not a DNS domain name such as clusters.example.com`}},
		{"domain-empty-label", ns + `domain = "a..b"`, []string{"Invalid DNS domain", "it has an empty label"}},
		{"service", ns + `domain = "example.com"` + "\n" + `service = "liqo"`,
			[]string{"Invalid DNS-SD service type", `"liqo" is not a DNS-SD service type`, "_<name>._tcp"}},
		{"nameserver", `domain = "example.com"` + "\n" + `nameserver = "10.0.0.53"`,
			[]string{"Invalid nameserver", `"10.0.0.53" is not a nameserver address host:port`, "missing port"}},
		{"timeout-zero", ns + `domain = "example.com"` + "\n" + `timeout = "0s"`, []string{"Invalid timeout", `"0s" is not positive`}},
		{"timeout-word", ns + `domain = "example.com"` + "\n" + `timeout = "soon"`, []string{"Invalid timeout", `"soon" is not a duration`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6Providers,
				Steps: []resource.TestStep{{
					Config:      "provider \"liqo\" {}\ndata \"liqo_dns_discovery\" \"d\" {\n" + tc.attrs + "\n}\n",
					PlanOnly:    true,
					ExpectError: offWrappedText(tc.want...),
				}},
			})
		})
	}
	if q := s.Queries(); len(q) != 0 {
		t.Errorf("invalid arguments reached the nameserver: %q", q)
	}
}

// liqoNamespaceSettled returns a wait for the provider cluster's namespace liqo to be gone or
// not terminating: another test's may still be terminating, wait for it before setupClusterFacts
// and leave none terminating for the next test (a cleanup after setupClusterFacts's).
func liqoNamespaceSettled(t *testing.T) func() {
	return func() { // not testenv.Eventually: the test's context has ended when cleanups run
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			ns := &corev1.Namespace{}
			err := cluster("provider").Client.Get(context.Background(), client.ObjectKey{Name: "liqo"}, ns)
			if apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp == nil) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("namespace liqo of the provider cluster still terminating after a minute (%v)", err)
			}
		}
	}
}

// TestDNSDiscoveryExampleCLI applies the documentation's example with the terraform CLI and the
// built provider, against a DNS server that publishes the provider test cluster (its API server
// by name, localhost, and port) and a cluster we have no credentials for: the discovered API
// server configures the fleet's provider block and liqo_cluster reads the cluster through it.
// The plan after apply is empty; a stale cluster-id in DNS fails the example's postcondition;
// nothing published gives the warning naming the name asked for.
func TestDNSDiscoveryExampleCLI(t *testing.T) {
	src := filepath.Join("..", "examples", "data-sources", "liqo_dns_discovery")
	liqoSettled := liqoNamespaceSettled(t)
	liqoSettled()
	t.Cleanup(liqoSettled)
	id, pod, _, _ := setupClusterFacts(t)
	port := providerAPIServerPort(t)
	s := testenv.NewDNSServer(t)
	dnsPublish(s, "provider", "localhost", port, "cluster-id="+id, "pod-cidr="+pod)
	dnsPublish(s, "stranger", "api.stranger.example.com", 6443, "cluster-id=cl-stranger")

	tf := newTerraformDir(t, src)
	if out := tf.run(t, "fmt", "-check", "-diff", "-no-color"); strings.TrimSpace(out) != "" {
		t.Errorf("terraform fmt -check: %s", out)
	}
	example := filepath.Join(tf.dir, "data-source.tf")
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(data), `"10.0.0.53:53"`, strconv.Quote(s.Addr), 1)
	if cfg == string(data) {
		t.Fatalf("%s no longer sets nameserver = \"10.0.0.53:53\"", src)
	}
	if err := os.WriteFile(example, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tf.dir, "versions.tf"), []byte(requiredProvidersBlock), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := tf.run(t, "validate", "-no-color"); !strings.Contains(out, "The configuration is valid") {
		t.Errorf("terraform validate:\n%s", out)
	}

	args := []string{"-input=false", "-no-color", "-var", fmt.Sprintf("kubeconfigs={provider=%q}", cluster("provider").KubeconfigPath)}
	tf.run(t, append([]string{"apply", "-auto-approve"}, args...)...)
	var fleet map[string]map[string]string
	if err := json.Unmarshal([]byte(tf.run(t, "output", "-json", "fleet")), &fleet); err != nil {
		t.Fatal(err)
	}
	p := fleet["provider"]
	if len(fleet) != 1 || p["cluster_id"] != id || p["api"] != fmt.Sprintf("https://localhost:%d", port) || p["pod_cidr"] != pod ||
		!strings.HasPrefix(p["version"], "v1.") {
		t.Errorf("output fleet: %v; want only provider, with cluster_id %s, api https://localhost:%d, pod_cidr %s and a version",
			fleet, id, port, pod)
	}
	if code, out := tf.exitCode(t, append([]string{"plan", "-detailed-exitcode"}, args...)...); code != 0 {
		t.Errorf("plan after apply: exit %d, want 0 (no changes):\n%s", code, out)
	}

	// DNS publishing another ID for the cluster: the example's postcondition stops the plan.
	s.Remove("provider." + dnsService)
	s.AddSRV("provider."+dnsService, 0, 0, port, "localhost")
	s.AddTXT("provider."+dnsService, "cluster-id=cl-stale")
	code, out := tf.exitCode(t, append([]string{"plan"}, args...)...)
	if want := "DNS publishes provider with cluster-id=cl-stale, but that cluster's ID is " + id + ": fix its TXT record."; code != 1 ||
		!strings.Contains(oneLine(out), want) {
		t.Errorf("plan with a stale cluster-id: exit %d, want 1 and %q:\n%s", code, want, out)
	}

	// Nothing published: no cluster, and a warning naming the name asked for.
	s.Remove(dnsService)
	code, out = tf.exitCode(t, append([]string{"plan", "-detailed-exitcode"}, args...)...)
	want := offWrappedText("Warning: No clusters published under clusters.example.com", "Asked for the PTR records of "+
		dnsService+".: nameserver "+s.Addr+" says that name does not exist (NXDOMAIN).")
	if code != 2 || !want.MatchString(out) || !strings.Contains(out, "- provider = {") {
		t.Errorf("plan with nothing published: exit %d, want 2 (fleet loses provider) and %s:\n%s", code, want, out)
	}
}

// providerAPIServerPort is the port of the provider test cluster's API server, which discovery
// tests publish.
func providerAPIServerPort(t *testing.T) uint16 {
	t.Helper()
	u, err := url.Parse(cluster("provider").Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		t.Fatalf("API server %s: %v", u, err)
	}
	return uint16(port)
}
