package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
)

// natAddress and natPort are where the provider's gateway client reaches the consumer's gateway
// server in TestPeeringOptions: a NAT on the path translates them to the server's own address
// and port (sandbox.HostAddress("consumer"), 51840), which the server's Service reports.
const (
	natAddress = "192.168.241.200"
	natPort    = 51900
)

// serverBehindNAT puts a NAT between the provider's gateway host and the consumer's server:
// packets the provider's host sends to natAddress:natPort go to the server's address and port
// (and the answers come back translated), while what it sends to the server's own address and
// port is dropped, so the client reaches the server only if it dials natAddress:natPort. The
// rules live in the provider's gateway host namespace, which the sandbox removes with it.
func serverBehindNAT(t *testing.T) {
	t.Helper()
	ns, server := sandbox.HostNetns("provider"), sandbox.HostAddress("consumer")
	for _, args := range [][]string{
		// mangle runs before nat: it sees the packets to natAddress untranslated.
		{"iptables", "-t", "mangle", "-A", "OUTPUT", "-d", server, "-p", "udp", "--dport", "51840", "-j", "DROP"},
		{"iptables", "-t", "nat", "-A", "OUTPUT", "-d", natAddress, "-p", "udp", "--dport", strconv.Itoa(natPort),
			"-j", "DNAT", "--to-destination", server + ":51840"},
	} {
		if out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// natForwarded is how many connections the NAT translated towards the gateway server.
func natForwarded(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", sandbox.HostNetns("provider"), "iptables", "-t", "nat", "-L", "OUTPUT",
		"-v", "-n", "-x").CombinedOutput()
	if err != nil {
		t.Fatalf("reading the NAT counters: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^\s*(\d+)\s+\d+\s+DNAT\b.*dpt:` + strconv.Itoa(natPort)).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no DNAT rule for port %d in:\n%s", natPort, out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// liqoctlPeerInfo is `liqoctl info peer <peer> -o json` on a cluster, decoded, with the raw
// output.
func (r *sandboxRun) liqoctlPeerInfo(t *testing.T, bin, on, peer string) (liqoctlPeer, string) {
	t.Helper()
	var out map[string]liqoctlPeer
	raw := r.liqoctl(t, bin, on, "info", "peer", peer, "-o", "json")
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("liqoctl info peer %s -o json on %s: %v\n%s", peer, on, err, raw)
	}
	return out[peer], string(raw)
}

// TestPeeringOptions applies examples/peering-options (liqo_peering with liqoctl peer's options)
// on the sandbox, and reads each result back with upstream liqoctl v1.2.0 (`info peer`, logged).
//
// Where the sandbox runs gateways (root): the gateway server on the consumer, behind a NAT
// (reached at another address and port; its own address and port dropped), with client_address
// and client_port telling the provider's client where to dial: the tunnel comes up only through
// the NAT (its counter moves), the stand-in pods reach each other, liqoctl on the provider shows the
// remote gateway as the Server at the NAT's address and port, and on the consumer as the Client.
// Then, in place: no virtual node (the slice stays accepted, liqoctl lists no virtual node); a
// liqo_virtual_node of the slice (liqoctl lists it, Healthy, from that slice), removed; no slice (liqoctl lists none, the peering stays authenticated); the slice and the node back.
// Every plan after an apply is empty, and destroy leaves nothing.
func TestPeeringOptions(t *testing.T) {
	bin := liqoctlBin(t)
	r := startSandbox(t, 2)
	vars := []string{"consumer_kubeconfig=" + filepath.Join(r.state, "consumer.kubeconfig"),
		"provider_kubeconfig=" + filepath.Join(r.state, "provider.kubeconfig")}
	if r.networking {
		serverBehindNAT(t)
		vars = append(vars, "nat_address="+natAddress, fmt.Sprintf("nat_port=%d", natPort))
	}
	dir := filepath.Join(copyExamples(t, r.root), "peering-options") // a copy: a virtual node is added to it below
	tf := func(what string, args ...string) {
		t.Helper()
		out, took, code := terraformIn(t, dir, r.tfEnv, args...)
		if code != 0 {
			t.Fatalf("%s: terraform %s: exit %d\n%s", what, args[0], code, out)
		}
		t.Logf("%s: terraform %s in %s", what, args[0], took.Round(time.Millisecond))
	}
	apply := func(what string, more ...string) {
		t.Helper()
		args := r.tfArgs("peering-options", append(vars, more...)...)
		tf(what, append([]string{"apply", "-auto-approve"}, args...)...)
		if out, _, code := terraformIn(t, dir, r.tfEnv, append([]string{"plan", "-detailed-exitcode"}, args...)...); code != 0 {
			t.Errorf("%s: plan after apply: exit %d, want 0 (no changes)\n%s", what, code, out)
		}
	}

	apply("server on the consumer behind NAT")
	if r.networking { // without a tunnel there is no gateway to read: an import takes the default, not server_location = "Consumer"
		r.expectImportsQuiet(t, "peering-options", r.tfArgs("peering-options", vars...), nil)
	}
	onConsumer, rawConsumer := r.liqoctlPeerInfo(t, bin, "consumer", "provider")
	onProvider, rawProvider := r.liqoctlPeerInfo(t, bin, "provider", "consumer")
	t.Logf("liqoctl info peer provider (on the consumer):\n%s\nliqoctl info peer consumer (on the provider):\n%s", rawConsumer, rawProvider)
	if len(onConsumer.Offloading.VirtualNodes) != 1 || onConsumer.Offloading.VirtualNodes[0].Status != "Healthy" {
		t.Errorf("liqoctl on the consumer: virtual nodes %+v, want one Healthy", onConsumer.Offloading.VirtualNodes)
	}
	if r.networking {
		if got := natForwarded(t); got == 0 {
			t.Error("the NAT translated nothing: the client did not dial client_address:client_port")
		}
		gwc := &netv1beta1.GatewayClient{}
		key := client.ObjectKey{Namespace: peering.TenantNamespace("consumer"), Name: "consumer"}
		if err := r.clients["provider"].Get(t.Context(), key, gwc); err != nil {
			t.Fatalf("the GatewayClient on the provider: %v", err)
		}
		if gwc.Spec.Endpoint.Port != natPort || len(gwc.Spec.Endpoint.Addresses) != 1 || gwc.Spec.Endpoint.Addresses[0] != natAddress {
			t.Errorf("the provider's GatewayClient dials %v:%d, want %s:%d", gwc.Spec.Endpoint.Addresses, gwc.Spec.Endpoint.Port, natAddress, natPort)
		}
		servers := &netv1beta1.GatewayServerList{}
		if err := r.clients["provider"].List(t.Context(), servers); err != nil || len(servers.Items) != 0 {
			t.Errorf("GatewayServers on the provider: %d, %v; want none (the consumer hosts the server)", len(servers.Items), err)
		}
		r.expectPodTraffic(t, "server on the consumer behind NAT", [2]string{"consumer", "provider"}, [2]string{"provider", "consumer"})
		if g := onProvider.Network.Gateway; onProvider.Network.Status != "Healthy" || g.Role != "Server" || g.Port != natPort ||
			len(g.Address) != 1 || g.Address[0] != natAddress {
			t.Errorf("liqoctl on the provider: network %+v, want Healthy with the remote gateway the Server at %s:%d",
				onProvider.Network, natAddress, natPort)
		}
		if g := onConsumer.Network.Gateway; onConsumer.Network.Status != "Healthy" || g.Role != "Client" {
			t.Errorf("liqoctl on the consumer: network %+v, want Healthy with the remote gateway the Client", onConsumer.Network)
		}
	}

	apply("no virtual node", "create_virtual_node=false")
	onConsumer, rawConsumer = r.liqoctlPeerInfo(t, bin, "consumer", "provider")
	t.Logf("liqoctl info peer provider (on the consumer), no virtual node:\n%s", rawConsumer)
	if s := onConsumer.Authentication.ResourceSlices; len(s) != 1 || !s[0].Accepted || len(onConsumer.Offloading.VirtualNodes) != 0 {
		t.Errorf("liqoctl on the consumer without a virtual node: slices %+v, virtual nodes %+v; want one accepted slice, no virtual node",
			s, onConsumer.Offloading.VirtualNodes)
	}

	// A virtual node of our own from the peering's slice (liqo_virtual_node), with labels and a patch.
	pool := filepath.Join(dir, "pool.tf")
	if err := os.WriteFile(pool, []byte(`resource "liqo_virtual_node" "pool" {
  cluster             = "consumer"
  name                = "provider-pool"
  provider_cluster_id = liqo_peering.this.provider_cluster_id
  resource_slice_name = liqo_peering.this.provider_cluster_id
  labels              = { "example.com/pool" = "e2e" }
  offloading_patch    = { node_selector = { "kubernetes.io/os" = "linux" } }
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	apply("a liqo_virtual_node from the peering's slice", "create_virtual_node=false")
	onConsumer, rawConsumer = r.liqoctlPeerInfo(t, bin, "consumer", "provider")
	t.Logf("liqoctl info peer provider (on the consumer), with liqo_virtual_node.pool:\n%s", rawConsumer)
	if vns := onConsumer.Offloading.VirtualNodes; len(vns) != 1 || vns[0].Name != "provider-pool" || vns[0].Status != "Healthy" ||
		vns[0].ResourceSlice != "provider" {
		t.Errorf("liqoctl on the consumer with liqo_virtual_node.pool: virtual nodes %+v, want provider-pool, Healthy, from slice provider", vns)
	}
	if err := os.Remove(pool); err != nil {
		t.Fatal(err)
	}
	apply("liqo_virtual_node removed", "create_virtual_node=false")

	apply("no resource slice", "create_resource_slice=false")
	onConsumer, rawConsumer = r.liqoctlPeerInfo(t, bin, "consumer", "provider")
	t.Logf("liqoctl info peer provider (on the consumer), no slice:\n%s", rawConsumer)
	if len(onConsumer.Authentication.ResourceSlices) != 0 || onConsumer.Authentication.Status != "Healthy" {
		t.Errorf("liqoctl on the consumer without a slice: %+v, want authentication Healthy and no slice", onConsumer.Authentication)
	}

	apply("slice and virtual node back")
	r.expectLiqoctlPeering(t, bin, "with the slice and the virtual node back")

	tf("destroy", append([]string{"destroy", "-auto-approve"}, r.tfArgs("peering-options", vars...)...)...)
	r.expectNothingLeft(t)
}
