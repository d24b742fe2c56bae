package fabric

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/go-logr/logr"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// benchGateway is a gateway's Desired towards nodes nodes of pods pods each (one /32 per pod,
// as upstream), with explicit MTUs (no underlay needed).
func benchGateway(nodes, pods int) Desired {
	g := Gateway{Address: addr("10.80.0.1"), TunnelInterface: "lo", LocalExternalCIDR: pfx("10.70.0.0/16"), MTU: 1450}
	for n := range nodes {
		gn := GatewayNode{Name: fmt.Sprintf("node-%d", n), Interface: fmt.Sprintf("liqo.n%d", n), ID: uint32(n + 1),
			NodeAddress: netip.AddrFrom4([4]byte{192, 168, 242, byte(n + 1)}), NodeIP: netip.AddrFrom4([4]byte{10, 80, 1, byte(n + 1)}), Mark: uint32(n + 1)}
		for p := range pods {
			gn.PodIPs = append(gn.PodIPs, netip.AddrFrom4([4]byte{10, 244, byte(n), byte(p + 2)}))
		}
		g.Nodes = append(g.Nodes, gn)
	}
	return GatewayDesired(g)
}

// BenchmarkApply measures, in a network namespace of its own, a gateway's Apply towards 10 nodes
// of 20 pods each: from nothing and back (Apply then RemoveAll), and again on what is already
// there (the steady state of a periodic re-apply).
func BenchmarkApply(b *testing.B) {
	testenv.RequireNetAdmin(b)
	ns := testenv.NewNetns(b, "lqfb")
	dp := &Dataplane{Encap: EncapVXLAN, Log: logr.Discard()}
	want := benchGateway(10, 20)
	ctx := context.Background()
	b.Run("create-and-remove", func(b *testing.B) {
		for b.Loop() {
			in(b, ns, func() error {
				if _, err := dp.Apply(ctx, want); err != nil {
					return err
				}
				_, err := dp.RemoveAll(ctx)
				return err
			})
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		apply(b, dp, ns, want)
		for b.Loop() {
			if rep := apply(b, dp, ns, want); rep.Changed() {
				b.Fatalf("re-apply changed %+v", rep)
			}
		}
	})
}
