package agent

import (
	"slices"
	"testing"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// TestApplySeveralRemotePodCIDRs: a peer with several pod CIDRs (upstream Liqo v1.2), as its
// Configuration declares them and the configuration controller maps them (two remapped, one
// not): the gateway reads them all from the objects, routes each through the tunnel as the
// local cluster sees it, lets WireGuard carry each as the peer uses it and rewrites the
// addresses of each remapped one. A pod CIDR dropped from the Configuration loses its route,
// its allowed IPs and its rules.
func TestApplySeveralRemotePodCIDRs(t *testing.T) {
	host := gatewayHost(t)
	cl := testCluster(t)
	c, ctx := cl.Client, t.Context()
	ns := newTenant(t, cl)
	underlay(t, host, 1400)

	conf := configuration(ns, "peer", "10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/24")
	conf.Spec.Remote.CIDR.External = []netv1beta1.CIDR{"10.4.0.0/16"}
	create(t, c, gatewayServer(ns, "server", "keys", int32(freeUDPPort(t)), 0), keySecret(ns, "keys", newKey(t)),
		publicKey(ns, "peer", newKey(t).PublicKey()), conf)
	conf.Status.Remote = &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{
		Pod: []netv1beta1.CIDR{"10.71.0.0/16", "10.2.0.0/16", "10.72.0.0/24"}, External: []netv1beta1.CIDR{"10.4.0.0/16"}}}
	if err := c.Status().Update(ctx, conf); err != nil {
		t.Fatal(err)
	}

	a := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server"})
	shutdownAtEnd(t, host, a)
	check := func(what string, routes, allowed []string, netmaps int) {
		t.Helper()
		d, err := a.readDesired(ctx)
		if err != nil {
			t.Fatalf("%s: readDesired: %v", what, err)
		}
		inHost(t, host, func() error { return a.apply(ctx, d) })
		st := readHost(t, host, a)
		if !slices.Equal(st.routes, routes) {
			t.Errorf("%s: routes through the tunnel %v, want %v (every remote network as the local cluster sees it)", what, st.routes, routes)
		}
		if st.rulesErr != nil || st.rules.Netmaps != netmaps {
			t.Errorf("%s: NAT rules %+v (%v), want %d address rewrites (two per remapped network)", what, st.rules, st.rulesErr, netmaps)
		}
		if got := ipNets(wgDevice(t, a.opts.Interface).Peers[0].AllowedIPs); !slices.Equal(got, allowed) {
			t.Errorf("%s: WireGuard allowed IPs %v, want %v (every remote network as the peer uses it)", what, got, allowed)
		}
	}
	check("three pod CIDRs, two remapped",
		[]string{"10.2.0.0/16", "10.4.0.0/16", "10.71.0.0/16", "10.72.0.0/24"},
		[]string{"169.254.18.2/32", "10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/24", "10.4.0.0/16"}, 4)

	// The peer drops its first pod CIDR; the controller maps the rest as before.
	conf.Spec.Remote.CIDR.Pod = []netv1beta1.CIDR{"10.2.0.0/16", "10.3.0.0/24"}
	if err := c.Update(ctx, conf); err != nil {
		t.Fatal(err)
	}
	conf.Status.Remote.CIDR.Pod = []netv1beta1.CIDR{"10.2.0.0/16", "10.72.0.0/24"}
	if err := c.Status().Update(ctx, conf); err != nil {
		t.Fatal(err)
	}
	check("first pod CIDR dropped",
		[]string{"10.2.0.0/16", "10.4.0.0/16", "10.72.0.0/24"},
		[]string{"169.254.18.2/32", "10.2.0.0/16", "10.3.0.0/24", "10.4.0.0/16"}, 2)
}
