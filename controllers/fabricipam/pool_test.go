package fabricipam

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// TestPoolNextFit: values go out in order, a key keeps its value, a released value is given
// again only after the others, a full pool says so, and a value two keys claim is refused.
func TestPoolNextFit(t *testing.T) {
	p := newPool[uint32](0, 3, func(x uint32) uint32 { return x + 1 })
	for i, key := range []string{"a", "b", "c"} {
		if v, err := p.allocate(key); err != nil || v != uint32(i) {
			t.Fatalf("allocate(%s) = %d, %v; want %d", key, v, err, i)
		}
	}
	if v, _ := p.allocate("a"); v != 0 {
		t.Errorf("allocate(a) again = %d, want 0", v)
	}
	p.release("a")
	if v, _ := p.allocate("d"); v != 3 {
		t.Errorf("after releasing a: allocate(d) = %d, want 3 (next-fit, not the released 0)", v)
	}
	if v, _ := p.allocate("e"); v != 0 {
		t.Errorf("allocate(e) = %d, want the released 0 at last", v)
	}
	if _, err := p.allocate("f"); !errors.Is(err, errExhausted) {
		t.Errorf("allocate(f) on a full pool: %v", err)
	}
	if err := p.restore("g", 1); err == nil || !strings.Contains(err.Error(), "claimed by both b and g") {
		t.Errorf("restore of a taken value: %v", err)
	}
}

// TestNewRefusesBadCIDRs: the internal CIDR must be an IPv4 network CIDR of /30 or more.
func TestNewRefusesBadCIDRs(t *testing.T) {
	for _, c := range []string{"10.80.0.1/16", "fd00::/64", "10.80.0.0/31", "nope"} {
		if _, err := New(nil, c); err == nil {
			t.Errorf("New(%q) accepted", c)
		}
	}
	a, err := New(nil, "10.80.0.0/16")
	if err != nil || a.CIDR() != netip.MustParsePrefix("10.80.0.0/16") {
		t.Errorf("New(10.80.0.0/16) = %v, %v", a, err)
	}
	if got := lastAddr(netip.MustParsePrefix("10.80.0.0/16")); got != netip.MustParseAddr("10.80.255.255") {
		t.Errorf("lastAddr = %s", got)
	}
}

// TestInterfaceName: names are upstream's form and fit a Linux interface name (15 bytes); a
// taken one is not given; a current one is kept.
func TestInterfaceName(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		name, err := InterfaceName("", func(n string) bool { return seen[n] })
		if err != nil || !strings.HasPrefix(name, consts.FabricInterfacePrefix) || len(name) != 15 || seen[name] {
			t.Fatalf("InterfaceName = %q, %v", name, err)
		}
		seen[name] = true
	}
	if name, _ := InterfaceName("liqo.keepmeplea", func(string) bool { return true }); name != "liqo.keepmeplea" {
		t.Errorf("current name not kept: %q", name)
	}
	if _, err := InterfaceName("", func(string) bool { return true }); err == nil {
		t.Error("no error when every name is taken")
	}
}
