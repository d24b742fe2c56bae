package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/peerkit/terraform-provider-liqo/internal/landiscovery"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// lanDiscoveryConfig browses interface iface with extra attributes.
func lanDiscoveryConfig(iface, extra string) string {
	return fmt.Sprintf(`
provider "liqo" {}

data "liqo_lan_discovery" "d" {
  interface = %q
  timeout   = "1500ms"
%s
}
`, iface, extra)
}

// lanAnnounce announces a cluster from a LAN member until the returned function (also run
// when the test ends) stops it.
func lanAnnounce(t *testing.T, m testenv.LANMember, opts landiscovery.AnnounceOptions) func() {
	t.Helper()
	var a *landiscovery.Announcer
	opts.Interface = m.Iface
	if err := netns.Do(m.NS, func() (err error) {
		a, err = landiscovery.NewAnnouncer(opts)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Start(ctx); close(done) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// TestAccLANDiscoveryDataSource browses, through the real terraform binary, a bridge of this
// process's network namespace on which two clusters are announced from namespaces of their
// own: both are listed in the shape of liqo_dns_discovery (an announced IP address as host, a
// DNS name kept); a cluster withdrawn is gone at the next read; nothing announced is an empty
// list.
func TestAccLANDiscoveryDataSource(t *testing.T) {
	const addr = "data.liqo_lan_discovery.d"
	lan := testenv.NewLAN(t, 2, true)
	rome, turin := lan.Members[0], lan.Members[1]
	stopRome := lanAnnounce(t, rome, landiscovery.AnnounceOptions{ClusterID: "cl-rome", Host: rome.Addr, Port: 6443,
		Version: "0.1.0", Shares: "50%"})
	stopTurin := lanAnnounce(t, turin, landiscovery.AnnounceOptions{ClusterID: "cl-turin", Host: "api.turin.example.com", Port: 443,
		IPs: []net.IP{net.ParseIP(turin.Addr)}, Version: "0.1.0", Shares: "cpu=8,memory=16Gi"})
	// hashicorp/mdns publishes SRV priority 10, weight 1.
	romeCheck := dnsCluster("cl-rome", "cl-rome", map[string]string{"cluster-id": "cl-rome", "version": "0.1.0", "shares": "50%"},
		[4]any{rome.Addr, 6443, 10, 1})
	turinCheck := dnsCluster("cl-turin", "cl-turin",
		map[string]string{"cluster-id": "cl-turin", "version": "0.1.0", "shares": "cpu=8,memory=16Gi"},
		[4]any{"api.turin.example.com", 443, 10, 1})

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		Steps: []resource.TestStep{{
			Config: lanDiscoveryConfig(lan.Bridge, ""),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("clusters"), knownvalue.ListExact([]knownvalue.Check{romeCheck, turinCheck})),
			},
		}, {
			// Rome stops announcing: withdrawn, gone at the next read.
			PreConfig: stopRome,
			Config:    lanDiscoveryConfig(lan.Bridge, ""),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("clusters"), knownvalue.ListExact([]knownvalue.Check{turinCheck})),
			},
		}, {
			// Nothing announced: an empty list (and a warning).
			PreConfig: stopTurin,
			Config:    lanDiscoveryConfig(lan.Bridge, ""),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("clusters"), knownvalue.ListExact([]knownvalue.Check{})),
			},
		}, {
			// An interface that does not exist: an error naming it.
			Config:      lanDiscoveryConfig("lqnosuch0", ""),
			ExpectError: offWrappedText("Discovering clusters on interface lqnosuch0", `network interface "lqnosuch0"`),
		}},
	})
}

// TestAccLANDiscoveryValidation rejects malformed arguments at plan time.
func TestAccLANDiscoveryValidation(t *testing.T) {
	for _, tc := range []struct {
		name, attrs string
		want        []string
	}{
		{"interface-slash", `interface = "eth0/1"`, []string{"Invalid network interface", `"eth0/1" is not a network interface name`}},
		{"interface-long", `interface = "averyveryverylongname"`, []string{"Invalid network interface", "1 to 15 characters"}},
		{"timeout-zero", `timeout = "0s"`, []string{"Invalid timeout", `"0s" is not positive`}},
		{"timeout-long", `timeout = "2m"`, []string{"Invalid timeout", `"2m" is more than 1m0s`}},
		{"timeout-word", `timeout = "soon"`, []string{"Invalid timeout", `"soon" is not a duration`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6Providers,
				Steps: []resource.TestStep{{
					Config:      "provider \"liqo\" {}\ndata \"liqo_lan_discovery\" \"d\" {\n" + tc.attrs + "\n}\n",
					PlanOnly:    true,
					ExpectError: offWrappedText(tc.want...),
				}},
			})
		})
	}
}

// TestLANDiscoveryExampleCLI applies examples/lan-discovery with the terraform CLI and the built
// provider, browsing a bridge on which the provider test cluster (its API server by name,
// localhost) and a cluster we have no credentials for are announced: the announced API server
// configures the fleet's provider block and liqo_cluster reads the cluster through it. The
// plan after apply is empty; our cluster announced under another ID fails the example's
// postcondition; our cluster withdrawn leaves the fleet.
func TestLANDiscoveryExampleCLI(t *testing.T) {
	liqoSettled := liqoNamespaceSettled(t)
	liqoSettled()
	t.Cleanup(liqoSettled)
	lan := testenv.NewLAN(t, 2, true)
	id, _, _, _ := setupClusterFacts(t)
	port := providerAPIServerPort(t)
	localhost := []net.IP{net.IPv4(127, 0, 0, 1)}
	stopProvider := lanAnnounce(t, lan.Members[0], landiscovery.AnnounceOptions{ClusterID: id, Host: "localhost", Port: port,
		IPs: localhost, Version: "0.1.0", Shares: "50%"})
	lanAnnounce(t, lan.Members[1], landiscovery.AnnounceOptions{ClusterID: "cl-stranger", Host: "api.stranger.example.com", Port: 6443,
		IPs: localhost})

	tf := newTerraformDir(t, filepath.Join("..", "examples", "lan-discovery"))
	if out := tf.run(t, "fmt", "-check", "-diff", "-no-color"); strings.TrimSpace(out) != "" {
		t.Errorf("terraform fmt -check: %s", out)
	}
	if err := os.WriteFile(filepath.Join(tf.dir, "versions.tf"), []byte(requiredProvidersBlock), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := tf.run(t, "validate", "-no-color"); !strings.Contains(out, "The configuration is valid") {
		t.Errorf("terraform validate:\n%s", out)
	}
	vars := func(kubeconfigID string) []string {
		return []string{"-input=false", "-no-color", "-var", "interface=" + lan.Bridge,
			"-var", fmt.Sprintf("kubeconfigs={%q=%q}", kubeconfigID, cluster("provider").KubeconfigPath)}
	}
	args := vars(id)
	tf.run(t, append([]string{"apply", "-auto-approve"}, args...)...)
	var fleet map[string]map[string]string
	if err := json.Unmarshal([]byte(tf.run(t, "output", "-json", "fleet")), &fleet); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{id: {"api": fmt.Sprintf("https://localhost:%d", port), "version": "0.1.0", "shares": "50%"}}
	if fmt.Sprint(fleet) != fmt.Sprint(want) {
		t.Errorf("output fleet: %v; want %v", fleet, want)
	}
	if code, out := tf.exitCode(t, append([]string{"plan", "-detailed-exitcode"}, args...)...); code != 0 {
		t.Errorf("plan after apply: exit %d, want 0 (no changes):\n%s", code, out)
	}

	// Our kubeconfig's cluster announced under another ID: the postcondition stops the plan.
	lanAnnounce(t, lan.Members[1], landiscovery.AnnounceOptions{ClusterID: "cl-impostor", Host: "localhost", Port: port, IPs: localhost})
	code, out := tf.exitCode(t, append([]string{"plan"}, vars("cl-impostor")...)...)
	if want := fmt.Sprintf("https://localhost:%d", port) + " is announced as cl-impostor, but that cluster's ID is " + id + "."; code != 1 ||
		!strings.Contains(oneLine(out), want) {
		t.Errorf("plan with an impostor: exit %d, want 1 and %q:\n%s", code, want, out)
	}

	// Ours withdrawn (only the others announced): the fleet loses the cluster.
	stopProvider()
	code, out = tf.exitCode(t, append([]string{"plan", "-detailed-exitcode"}, args...)...)
	if code != 2 || (!strings.Contains(out, "- "+id+" = {") && !strings.Contains(out, `- "`+id+`" = {`)) {
		t.Errorf("plan with the cluster withdrawn: exit %d, want 2 (fleet loses %s):\n%s", code, id, out)
	}
}
