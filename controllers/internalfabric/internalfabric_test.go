package internalfabric_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/fabricfirewall"
	"github.com/peerkit/terraform-provider-liqo/controllers/fabricipam"
	"github.com/peerkit/terraform-provider-liqo/controllers/fabricroute"
	"github.com/peerkit/terraform-provider-liqo/controllers/internalfabric"
	"github.com/peerkit/terraform-provider-liqo/controllers/internalnode"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

const ns = "liqo-tenant-provider"

// start runs the fabric's reconcilers on c, sharing a fresh allocator.
func start(t *testing.T, c *testenv.Cluster) (stop func()) {
	t.Helper()
	return testenv.StartManager(t, c, func(mgr ctrl.Manager) error {
		ipam, err := fabricipam.New(mgr.GetAPIReader(), consts.DefaultInternalCIDR)
		if err != nil {
			return err
		}
		if err := (&internalnode.Reconciler{Client: mgr.GetClient(), IPAM: ipam}).SetupWithManager(mgr); err != nil {
			return err
		}
		if err := (&internalfabric.GatewayReconciler[*netv1beta1.GatewayServer]{Client: mgr.GetClient(),
			Gateway: internalfabric.ServerKind, IPAM: ipam}).SetupWithManager(mgr); err != nil {
			return err
		}
		if err := (&internalfabric.TunnelReconciler{Client: mgr.GetClient(), IPAM: ipam}).SetupWithManager(mgr); err != nil {
			return err
		}
		if err := (&fabricroute.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&fabricfirewall.Reconciler{Client: mgr.GetClient(), PodCIDRs: []string{"10.244.0.0/16"},
			ExternalCIDR: "10.70.0.0/16"}).SetupWithManager(mgr)
	})
}

// tunnels returns the GeneveTunnels of the namespace by name: their IDs.
func tunnels(ctx context.Context, c client.Client) (map[string]uint32, error) {
	var list netv1beta1.GeneveTunnelList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := map[string]uint32{}
	for _, tun := range list.Items {
		out[tun.Name] = tun.Spec.ID
	}
	return out, nil
}

// TestInternalFabric (with the fabricroute and fabricfirewall reconcilers): a GatewayServer whose pod address and peer CIDRs are known gets an
// InternalFabric (named after the peer, the peer's remapped pod and external CIDRs, the
// gateway's pod address, an internal address other than the nodes'); each (fabric, node) pair a
// GeneveTunnel with its own ID; the nodes a RouteConfiguration with the remote CIDRs via the
// gateway's internal address; the gateways a RouteConfiguration per node with a /32 per pod of
// the node (not host-network ones); the nodes the peering's SNAT table. A node removed loses its tunnel; a restarted manager keeps the
// IDs; the gateway deleted takes the fabric and its tunnels.
func TestInternalFabric(t *testing.T) {
	ctx := t.Context()
	env := testenv.New(t, testenv.ClusterOptions{Name: "a"})
	cl := env.Cluster("a")
	c := cl.Client
	for _, n := range []string{"node-1", "node-2"} {
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{ns, consts.LiqoNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	// No kube-controller-manager here to make the ServiceAccount pods need.
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	stop := start(t, cl)
	gw := createGateway(t, c)

	f := &netv1beta1.InternalFabric{}
	testenv.EventuallyOK(t, "the InternalFabric", time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "provider"}, f); err != nil {
			return err
		}
		if f.Spec.GatewayIP != "10.244.0.17" || f.Spec.MTU != 1340 || f.Labels[consts.RemoteClusterIDLabel] != "provider" ||
			!slices.Equal(f.Spec.RemoteCIDRs, []netv1beta1.CIDR{"10.71.0.0/16", "10.72.0.0/16"}) || f.Spec.Interface.Gateway.IP == "" ||
			len(f.Spec.Interface.Node.Name) != 15 || !metav1.IsControlledBy(f, gw) {
			return fmt.Errorf("InternalFabric %+v %+v", f.ObjectMeta, f.Spec)
		}
		return nil
	})
	var nodes netv1beta1.InternalNodeList
	if err := c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	for _, in := range nodes.Items {
		if in.Spec.Interface.Node.IP == f.Spec.Interface.Gateway.IP {
			t.Errorf("InternalNode %s and the InternalFabric share the address %s", in.Name, f.Spec.Interface.Gateway.IP)
		}
	}
	var ids map[string]uint32
	testenv.EventuallyOK(t, "a GeneveTunnel per node", time.Minute, func() error {
		got, err := tunnels(ctx, c)
		if err != nil || len(got) != 2 || got["provider-node-1"] == got["provider-node-2"] {
			return fmt.Errorf("GeneveTunnels %v, %w; want provider-node-1 and provider-node-2 with their own IDs", got, err)
		}
		ids = got
		return nil
	})
	checkNodeRoutes(t, c, f)
	checkGatewayRoutes(t, c)
	checkSNAT(t, c)

	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyOK(t, "node-2's tunnel gone", time.Minute, func() error {
		got, err := tunnels(ctx, c)
		if err != nil || len(got) != 1 || got["provider-node-1"] != ids["provider-node-1"] {
			return fmt.Errorf("GeneveTunnels %v, %w; want provider-node-1 only, ID %d", got, err, ids["provider-node-1"])
		}
		return nil
	})

	stop()
	if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-3"}}); err != nil {
		t.Fatal(err)
	}
	start(t, cl)
	testenv.EventuallyOK(t, "node-3's tunnel after a restart, node-1's ID kept", time.Minute, func() error {
		got, err := tunnels(ctx, c)
		if err != nil || len(got) != 2 || got["provider-node-1"] != ids["provider-node-1"] || got["provider-node-3"] == ids["provider-node-1"] {
			return fmt.Errorf("GeneveTunnels %v, %w; want provider-node-1 (ID %d) and provider-node-3 with another", got, err, ids["provider-node-1"])
		}
		return nil
	})

	if err := c.Delete(ctx, gw); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyOK(t, "the fabric, its tunnels and node routes gone with the gateway", time.Minute, func() error {
		got, err := tunnels(ctx, c)
		gerr := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "provider"}, &netv1beta1.InternalFabric{})
		rerr := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "provider-node-gw"}, &netv1beta1.RouteConfiguration{})
		if !apierrors.IsNotFound(gerr) || !apierrors.IsNotFound(rerr) || err != nil || len(got) != 0 {
			return fmt.Errorf("InternalFabric: %w; RouteConfiguration: %w; GeneveTunnels %v, %w", gerr, rerr, got, err)
		}
		return nil
	})
}

// createGateway creates the GatewayServer for peer "provider", its pod address in status, and
// the peer's Configuration with its CIDRs as remapped here.
func createGateway(t *testing.T, c client.Client) *netv1beta1.GatewayServer {
	t.Helper()
	ctx := t.Context()
	labels := map[string]string{consts.RemoteClusterIDLabel: "provider"}
	gw := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "server", Labels: labels},
		Spec: netv1beta1.GatewayServerSpec{Endpoint: netv1beta1.Endpoint{Port: 51840, ServiceType: corev1.ServiceTypeNodePort}, MTU: 1340}}
	if err := c.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	gw.Status.InternalEndpoint = &netv1beta1.InternalGatewayEndpoint{IP: ptr.To(netv1beta1.IP("10.244.0.17")), Node: ptr.To("node-1")}
	if err := c.Status().Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	conf := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "provider", Labels: labels},
		Spec: netv1beta1.ConfigurationSpec{Remote: netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{
			Pod: []netv1beta1.CIDR{"10.244.0.0/16"}, External: []netv1beta1.CIDR{"10.70.0.0/16"}}}}}
	if err := c.Create(ctx, conf); err != nil {
		t.Fatal(err)
	}
	conf.Status.Remote = &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{
		Pod: []netv1beta1.CIDR{"10.71.0.0/16"}, External: []netv1beta1.CIDR{"10.72.0.0/16"}}}
	if err := c.Status().Update(ctx, conf); err != nil {
		t.Fatal(err)
	}
	return gw
}

// checkNodeRoutes checks the nodes' RouteConfiguration to the gateway of f.
func checkNodeRoutes(t *testing.T, c client.Client, f *netv1beta1.InternalFabric) {
	t.Helper()
	gw := f.Spec.Interface.Gateway.IP
	testenv.EventuallyOK(t, "the nodes' routes to the gateway", time.Minute, func() error {
		rc := &netv1beta1.RouteConfiguration{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "provider-node-gw"}, rc); err != nil {
			return err
		}
		r := rc.Spec.Table.Rules
		if rc.Labels[consts.RouteCategoryLabel] != consts.RouteCategoryFabric || len(r) != 3 ||
			*r[0].Routes[0].Dev != f.Spec.Interface.Node.Name || string(*r[0].Dst) != string(gw)+"/32" ||
			*r[1].Dst != "10.71.0.0/16" || *r[1].Routes[0].Gw != gw || *r[2].Dst != "10.72.0.0/16" || *r[2].Routes[0].Gw != gw {
			return fmt.Errorf("RouteConfiguration %v %+v", rc.Labels, rc.Spec.Table)
		}
		return nil
	})
}

// checkGatewayRoutes: a pod on node-1 (and a host-network one, left out) shows in the gateways'
// routes to node-1, via node-1's internal address; it goes from them when deleted.
func checkGatewayRoutes(t *testing.T, c client.Client) {
	t.Helper()
	ctx := t.Context()
	in := &netv1beta1.InternalNode{}
	if err := c.Get(ctx, client.ObjectKey{Name: "node-1"}, in); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name, ip string
		host     bool
	}{{"web", "10.244.1.5", false}, {"host", "192.0.2.1", true}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.name}, Spec: corev1.PodSpec{NodeName: "node-1",
			HostNetwork: p.host, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status.PodIP = p.ip
		if err := c.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	routes := func(want string) func() error {
		return func() error {
			rc := &netv1beta1.RouteConfiguration{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: "node-1-gw-node"}, rc); err != nil {
				return err
			}
			got := ""
			for _, rule := range rc.Spec.Table.Rules {
				for _, r := range rule.Routes {
					got += fmt.Sprintf("%s gw %v dev %v; ", *r.Dst, ptr.Deref(r.Gw, ""), ptr.Deref(r.Dev, ""))
				}
			}
			if got != want || rc.Labels[consts.RouteCategoryLabel] != consts.RouteCategoryGateway {
				return fmt.Errorf("routes %q, want %q; labels %v", got, want, rc.Labels)
			}
			return nil
		}
	}
	ip, dev := in.Spec.Interface.Node.IP, in.Spec.Interface.Gateway.Name
	testenv.EventuallyOK(t, "the gateways' routes to node-1's pod", time.Minute,
		routes(fmt.Sprintf("%s/32 gw  dev %s; 10.244.1.5/32 gw %s dev ; ", ip, dev, ip)))
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyOK(t, "the deleted pod's route gone", time.Minute, routes(fmt.Sprintf("%s/32 gw  dev %s; ", ip, dev)))
}

// checkSNAT: the nodes' SNAT table of the peering keeps local pods' sources towards the peer's
// remapped CIDRs and rewrites others to 10.70.0.0.
func checkSNAT(t *testing.T, c client.Client) {
	t.Helper()
	testenv.EventuallyOK(t, "the peering's SNAT table", time.Minute, func() error {
		fw := &netv1beta1.FirewallConfiguration{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "provider-masquerade-bypass"}, fw); err != nil {
			return err
		}
		var got []string
		for _, r := range fw.Spec.Table.Chains[0].Rules.NatRules {
			got = append(got, ptr.Deref(r.Name, "")+"->"+ptr.Deref(r.To, ""))
		}
		want := []string{"podcidr-provider-10-244-0-0-16-10-71-0-0-16->10.244.0.0/16", "service-nodeport-provider-10-71-0-0-16->10.70.0.0",
			"podcidr-provider-ext-10-244-0-0-16->10.244.0.0/16", "service-nodeport-provider-ext->10.70.0.0"}
		if !slices.Equal(got, want) {
			return fmt.Errorf("NAT rules %v, want %v", got, want)
		}
		return nil
	})
}
