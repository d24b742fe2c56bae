package internalnode_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/fabricipam"
	"github.com/peerkit/terraform-provider-liqo/controllers/internalnode"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// start runs the InternalNode reconciler, with a fresh allocator (as a restarted controller
// manager has), on c until stop or the test's end.
func start(t *testing.T, c *testenv.Cluster) (stop func()) {
	t.Helper()
	return testenv.StartManager(t, c, func(mgr ctrl.Manager) error {
		ipam, err := fabricipam.New(mgr.GetAPIReader(), consts.DefaultInternalCIDR)
		if err != nil {
			return err
		}
		return (&internalnode.Reconciler{Client: mgr.GetClient(), IPAM: ipam}).SetupWithManager(mgr)
	})
}

// internalNodes returns the InternalNodes by name: "<gateway interface> <node IP>".
func internalNodes(ctx context.Context, c client.Client) (map[string]string, error) {
	var list netv1beta1.InternalNodeList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, in := range list.Items {
		out[in.Name] = in.Spec.Interface.Gateway.Name + " " + string(in.Spec.Interface.Node.IP)
	}
	return out, nil
}

// TestInternalNodes: every real Node gets an InternalNode (not the virtual one) with its own
// gateway interface name and address of 10.80.0.0/16; a deleted Node loses it; a restarted
// manager gives every node the same name and address and a new node an address no other holds;
// an InternalNode left without its Node while the manager was down is deleted at start.
func TestInternalNodes(t *testing.T) {
	ctx := t.Context()
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", Nodes: []testenv.NodeOptions{{Name: "kwok-1"}}})
	cl := env.Cluster("a")
	c := cl.Client
	mkNode := func(name string, labels map[string]string) {
		t.Helper()
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
	}
	mkNode("node-1", nil)
	mkNode("node-2", nil)
	mkNode("liqo-provider", map[string]string{consts.TypeLabel: consts.VirtualNodeType})
	stop := start(t, cl)

	var first map[string]string
	testenv.EventuallyOK(t, "an InternalNode per real node", time.Minute, func() error {
		got, err := internalNodes(ctx, c)
		if err != nil || len(got) != 3 || got["kwok-1"] == "" || got["node-1"] == "" || got["node-2"] == "" {
			return fmt.Errorf("InternalNodes %v, %w; want kwok-1, node-1 and node-2", got, err)
		}
		first = got
		return nil
	})
	checkDistinct(t, first)

	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyOK(t, "node-2's InternalNode gone", time.Minute, func() error {
		got, err := internalNodes(ctx, c)
		if _, ok := got["node-2"]; ok || err != nil {
			return fmt.Errorf("InternalNodes %v, %w", got, err)
		}
		return nil
	})

	stop()
	// While the manager is down: node-1 goes, node-3 comes.
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}); err != nil {
		t.Fatal(err)
	}
	mkNode("node-3", nil)
	mkNode("node-4", nil)
	// node-3's InternalNode as an earlier manager would have left it, with an address the
	// allocator would not hand out first: it must come back as it is.
	kept := &netv1beta1.InternalNode{ObjectMeta: metav1.ObjectMeta{Name: "node-3"}, Spec: netv1beta1.InternalNodeSpec{
		Interface: netv1beta1.InternalNodeSpecInterface{Gateway: netv1beta1.InternalNodeSpecInterfaceGateway{Name: "liqo.keepme1234"},
			Node: netv1beta1.InternalNodeSpecInterfaceNode{IP: "10.80.0.200"}}}}
	if err := c.Create(ctx, kept); err != nil {
		t.Fatal(err)
	}
	first["node-3"] = "liqo.keepme1234 10.80.0.200"
	start(t, cl)
	testenv.EventuallyOK(t, "the InternalNodes after a restart", time.Minute, func() error {
		got, err := internalNodes(ctx, c)
		if err != nil || len(got) != 3 || got["kwok-1"] != first["kwok-1"] || got["node-3"] != first["node-3"] || got["node-4"] == "" {
			return fmt.Errorf("InternalNodes %v, %w; want kwok-1 and node-3 as before (%s, %s), node-4, no node-1", got, err,
				first["kwok-1"], first["node-3"])
		}
		return nil
	})
	got, _ := internalNodes(ctx, c)
	checkDistinct(t, got)
}

// checkDistinct fails unless every InternalNode has its own interface name and address, in the
// internal CIDR.
func checkDistinct(t *testing.T, nodes map[string]string) {
	t.Helper()
	cidr := netip.MustParsePrefix(consts.DefaultInternalCIDR)
	names, ips := map[string]string{}, map[string]string{}
	for node, v := range nodes {
		f := strings.Fields(v)
		if len(f) != 2 || !strings.HasPrefix(f[0], consts.FabricInterfacePrefix) || len(f[0]) != 15 {
			t.Errorf("%s: interface and address %q", node, v)
			continue
		}
		if ip, err := netip.ParseAddr(f[1]); err != nil || !cidr.Contains(ip) || ip == cidr.Addr() {
			t.Errorf("%s: address %s not a host of %s", node, f[1], cidr)
		}
		if other, ok := names[f[0]]; ok {
			t.Errorf("%s and %s share the interface name %s", node, other, f[0])
		}
		if other, ok := ips[f[1]]; ok {
			t.Errorf("%s and %s share the address %s", node, other, f[1])
		}
		names[f[0]], ips[f[1]] = node, node
	}
}
