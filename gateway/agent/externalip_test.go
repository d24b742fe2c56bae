package agent

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/peerkit/terraform-provider-liqo/gateway/tunnel"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// ipObject is an ipam.liqo.io IP in ns with spec.ip local (status set apart).
func ipObject(ns, name, local string) *ipamv1alpha1.IP {
	return &ipamv1alpha1.IP{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: ipamv1alpha1.IPSpec{IP: netv1beta1.IP(local)}}
}

// setStatusIP writes status.ip of ip.
func setStatusIP(t *testing.T, cl *testenv.Cluster, ip *ipamv1alpha1.IP, external string) {
	t.Helper()
	ip.Status.IP = netv1beta1.IP(external)
	if err := cl.Client.Status().Update(t.Context(), ip); err != nil {
		t.Fatalf("writing status.ip of IP %s/%s: %v", ip.Namespace, ip.Name, err)
	}
}

// TestReadExternalIPs: the desired state holds the IPs of the Liqo namespace (the option's)
// that have both spec.ip and status.ip, by name; IPs without status.ip, and IPs of other
// namespaces (the tenant's, the default Liqo namespace), are left out.
func TestReadExternalIPs(t *testing.T) {
	cl := testCluster(t)
	ns := newTenant(t, cl)
	liqoNS := newTenant(t, cl) // a Liqo namespace of the test's own
	create(t, cl.Client, keySecret(ns, "keys", newKey(t)), publicKey(ns, "peer", newKey(t).PublicKey()),
		configuration(ns, "peer", "10.2.0.0/16"), gatewayServer(ns, "server", "keys", 51840, 1400))
	b, a, pending, tenants := ipObject(liqoNS, "b", "10.96.0.11"), ipObject(liqoNS, "a", "10.96.0.10"),
		ipObject(liqoNS, "pending", "10.96.0.12"), ipObject(ns, "tenant", "10.96.0.13")
	create(t, cl.Client, b, a, pending, tenants)
	setStatusIP(t, cl, b, "10.80.0.6")
	setStatusIP(t, cl, a, "10.80.0.5")
	setStatusIP(t, cl, tenants, "10.80.0.7")

	ag := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server", LiqoNamespace: liqoNS})
	d, err := ag.readDesired(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(d.externalIPs), "[10.80.0.5->10.96.0.10 10.80.0.6->10.96.0.11]"; got != want {
		t.Errorf("external IPs %s, want %s (those of %s with status.ip, by name)", got, want, liqoNS)
	}
	// The default Liqo namespace is another one: none of these.
	def := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server"})
	if def.opts.LiqoNamespace != "liqo" {
		t.Errorf("default Liqo namespace %q, want liqo", def.opts.LiqoNamespace)
	}
	if d, err := def.readDesired(t.Context()); err != nil || len(d.externalIPs) != 0 {
		t.Errorf("with the default Liqo namespace: external IPs %v (%v), want none", d.externalIPs, err)
	}
}

// TestRunFollowsExternalIPs runs a gateway: an IP of its Liqo namespace becomes two rewrites
// in its table (status.ip to spec.ip from the tunnel, back into it) once it has status.ip; a
// new status.ip replaces them, another namespace's IP adds none, and a deleted IP takes its
// rewrites with it, all live through the cache.
func TestRunFollowsExternalIPs(t *testing.T) {
	host := gatewayHost(t)
	cl := testCluster(t)
	c := cl.Client
	ns := newTenant(t, cl)
	liqoNS := newTenant(t, cl)
	underlay(t, host, 1400)
	create(t, c, keySecret(ns, "keys", newKey(t)), publicKey(ns, "peer", newKey(t).PublicKey()),
		configuration(ns, "peer", "10.2.0.0/16"), gatewayServer(ns, "server", "keys", int32(freeUDPPort(t)), 1400))
	proxy := ipObject(liqoNS, "api-server-proxy", "10.96.0.10")
	create(t, c, proxy)
	a, err := New(cl.Config, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server", LiqoNamespace: liqoNS}, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(tunnel.SocketPath(a.opts.Interface)) })
	r := startRun(t, a, host)
	rules := func(what string, want ...string) {
		t.Helper()
		testenv.EventuallyOK(t, what, 10*time.Second, func() error {
			st := readHost(t, host, a)
			if st.rulesErr != nil {
				return st.rulesErr
			}
			if !slices.Equal(st.rules.ExternalIPWrites, want) || st.rules.ExternalIPs != len(want) {
				return fmt.Errorf("external IP rewrites in the kernel write %v, want %v", st.rules.ExternalIPWrites, want)
			}
			return nil
		})
	}
	rules("no rewrite for an IP without status.ip")
	setStatusIP(t, cl, proxy, "10.80.0.5")
	rules("the rewrites of status.ip", "dst=10.96.0.10", "src=10.80.0.5")
	setStatusIP(t, cl, proxy, "10.80.0.9")
	rules("the rewrites of the new status.ip", "dst=10.96.0.10", "src=10.80.0.9")
	other := ipObject(ns, "tenant", "10.96.0.11")
	create(t, c, other)
	setStatusIP(t, cl, other, "10.80.0.6")
	second := ipObject(liqoNS, "second", "10.96.0.12")
	create(t, c, second)
	setStatusIP(t, cl, second, "10.80.0.7")
	rules("the rewrites of both IPs of the Liqo namespace, not another namespace's", "dst=10.96.0.10", "dst=10.96.0.12", "src=10.80.0.9", "src=10.80.0.7")
	if err := c.Delete(t.Context(), proxy); err != nil {
		t.Fatal(err)
	}
	rules("no rewrite of a deleted IP", "dst=10.96.0.12", "src=10.80.0.7")
	if err := r.stop(t); err != nil {
		t.Errorf("Run returned %v", err)
	}
}
