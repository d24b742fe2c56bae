package e2e

import (
	"context"
	"net/netip"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// startManager runs a controller-runtime manager against c with the reconcilers setup adds,
// until the test ends.
func startManager(tb testing.TB, c *testenv.Cluster, setup func(ctrl.Manager) error) {
	tb.Helper()
	testenv.StartManager(tb, c, setup)
}

// waitRemap waits until the Configuration name in ns reports a remapped pod CIDR, and returns it.
func waitRemap(ctx context.Context, tb testing.TB, c *testenv.Cluster, ns, name string) netip.Prefix {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	conf := &netv1beta1.Configuration{}
	for time.Now().Before(deadline) {
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, conf); err == nil &&
			conf.Status.Remote != nil && len(conf.Status.Remote.CIDR.Pod) == 1 && conf.Status.Remote.CIDR.Pod[0] != conf.Spec.Remote.CIDR.Pod[0] {
			return netip.MustParsePrefix(string(conf.Status.Remote.CIDR.Pod[0]))
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("Configuration %s/%s in cluster %s: no remapped pod CIDR; status %+v", ns, name, c.Name, conf.Status)
	return netip.Prefix{}
}

// mapIP moves ip from its network real into mapped, keeping the host part.
func mapIP(ip string, real, mapped netip.Prefix) string {
	a, m := netip.MustParseAddr(ip).As4(), mapped.Masked().Addr().As4()
	var out [4]byte
	for i := range 4 {
		bits := max(0, min(8, real.Bits()-8*i))
		mask := byte(0xff << (8 - bits))
		out[i] = m[i]&mask | a[i]&^mask
	}
	return netip.AddrFrom4(out).String()
}
