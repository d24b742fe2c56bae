package nat

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/peerkit/terraform-provider-liqo/internal/netns"
)

func cidr(t *testing.T, s string) net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return *n
}

func remapRules(t *testing.T) Rules {
	return Rules{Interface: "liqo-test0", MTU: 1440, Remaps: []Remap{
		{Real: cidr(t, "10.1.0.0/16"), Mapped: cidr(t, "10.71.0.0/16")},
		{Real: cidr(t, "10.2.0.0/16"), Mapped: cidr(t, "10.72.0.0/16")},
	}}
}

// TestRulesShape: the clamp is always there; each remap adds one source rewrite from the tunnel
// and one destination rewrite into it.
func TestRulesShape(t *testing.T) {
	plain := remapRules(t)
	plain.Remaps = nil
	got, err := plain.rules()
	if err != nil {
		t.Fatal(err)
	}
	if len(got[ChainMangleForward]) != 2 || len(got[ChainRawPrerouting]) != 0 || len(got[ChainPostrouting]) != 0 {
		t.Errorf("without remaps: %d/%d/%d rules in forward/raw prerouting/postrouting, want 2/0/0",
			len(got[ChainMangleForward]), len(got[ChainRawPrerouting]), len(got[ChainPostrouting]))
	}
	got, err = remapRules(t).rules()
	if err != nil {
		t.Fatal(err)
	}
	if n, m := len(got[ChainRawPrerouting]), len(got[ChainPostrouting]); n != 2 || m != 2 {
		t.Errorf("%d/%d rewrite rules in raw prerouting/postrouting, want 2/2", n, m)
	}
	var st State
	for _, rule := range got[ChainPostrouting] {
		st.read(ChainPostrouting, rule)
	}
	if st.Netmaps != 2 {
		t.Errorf("%d address rewrites into the tunnel, want 2", st.Netmaps)
	}
}

// TestRulesRejectBadInput: remaps of different sizes or IPv6, and impossible MTUs, are errors
// that name what is wrong.
func TestRulesRejectBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		r    Rules
		want string
	}{
		"sizes differ": {Rules{Interface: "x", MTU: 1400, Remaps: []Remap{{Real: cidr(t, "10.1.0.0/16"), Mapped: cidr(t, "10.71.0.0/24")}}}, "differ in size"},
		"ipv6":         {Rules{Interface: "x", MTU: 1400, Remaps: []Remap{{Real: cidr(t, "fd00::/64"), Mapped: cidr(t, "fd01::/64")}}}, "only IPv4"},
		"mtu":          {Rules{Interface: "x", MTU: 20}, "MTU 20"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tc.r.rules()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestRewriteKeepsHost: the rewrite keeps the host bits (mask) and sets the network's (xor), and
// writes with the IP and pseudo-header checksums updated.
func TestRewriteKeepsHost(t *testing.T) {
	exprs := rewrite(dstOffset, cidr(t, "10.71.0.0/16"))
	bw, write := exprs[1].(*expr.Bitwise), exprs[2].(*expr.Payload)
	if !bytes.Equal(bw.Mask, []byte{0, 0, 255, 255}) || !bytes.Equal(bw.Xor, []byte{10, 71, 0, 0}) {
		t.Errorf("bitwise mask %v xor %v, want 0.0.255.255 and 10.71.0.0", net.IP(bw.Mask), net.IP(bw.Xor))
	}
	if write.OperationType != expr.PayloadWrite || write.Offset != dstOffset || write.CsumType != expr.CsumTypeInet ||
		write.CsumOffset != ipChecksumOffset || write.CsumFlags != unix.NFT_PAYLOAD_L4CSUM_PSEUDOHDR {
		t.Errorf("payload write %+v, want the destination with the IP and L4 checksums updated", write)
	}
}

// inNewNetns runs fn in a fresh network namespace (as root).
func inNewNetns(t *testing.T, fn func() error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: writes nftables rules in a network namespace")
	}
	name := "lqnat-" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")
	if len(name) > 30 {
		name = name[:30]
	}
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	if err := netns.Do(netns.Named(name), fn); err != nil {
		t.Fatal(err)
	}
}

// TestSyncReplaceRemove writes the table in the kernel, replaces it, and removes it; removing a
// missing table is not an error.
func TestSyncReplaceRemove(t *testing.T) {
	inNewNetns(t, func() error {
		r := remapRules(t)
		if err := r.Sync(); err != nil {
			return err
		}
		if err := r.Sync(); err != nil { // a second Sync replaces, it does not add
			return err
		}
		got, err := r.Installed()
		if err != nil {
			return err
		}
		for chain, want := range map[string]int{ChainMangleForward: 2, ChainRawPrerouting: 2, ChainPostrouting: 2} {
			if got.Rules[chain] != want {
				t.Errorf("chain %s: %d rules in the kernel, want %d", chain, got.Rules[chain], want)
			}
		}
		if got.ClampMSS != 1400 {
			t.Errorf("MSS clamp sets %d, want 1400", got.ClampMSS)
		}
		if got.Netmaps != 4 {
			t.Errorf("%d address rewrites in the kernel, want 4", got.Netmaps)
		}

		r.Remaps = nil
		if err := r.Sync(); err != nil {
			return err
		}
		if got, err = r.Installed(); err != nil {
			return err
		}
		if got.Netmaps != 0 || got.Rules[ChainRawPrerouting] != 0 || got.ClampMSS != 1400 {
			t.Errorf("after the remaps went: %+v, want only the clamp", got)
		}

		other := Rules{Interface: "liqo-other", MTU: 1400}
		if err := other.Sync(); err != nil {
			return err
		}
		if err := r.Remove(); err != nil {
			return err
		}
		if _, err := r.Installed(); !errors.Is(err, ErrNoTable) {
			t.Errorf("after Remove: %v, want ErrNoTable", err)
		}
		if _, err := other.Installed(); err != nil {
			t.Errorf("Remove touched another gateway's table: %v", err)
		}
		if tables, err := Tables(); err != nil || !slices.Equal(tables, []string{other.Table()}) {
			t.Errorf("Tables: %v (%v), want only %s", tables, err, other.Table())
		}
		return r.Remove()
	})
}

// TestExternalIPRules: each external IP adds, beside the remaps', a destination rewrite of
// External to Local coming out of the tunnel and a source rewrite of Local to External going
// into it, matching single addresses; the kernel holds them, told apart from the remaps'.
func TestExternalIPRules(t *testing.T) {
	r := remapRules(t)
	r.ExternalIPs = []ExternalIP{{Local: net.ParseIP("10.96.0.10"), External: net.ParseIP("10.80.0.5")}}
	got, err := r.rules()
	if err != nil {
		t.Fatal(err)
	}
	if n, m := len(got[ChainRawPrerouting]), len(got[ChainPostrouting]); n != 3 || m != 3 {
		t.Fatalf("%d/%d rules in raw prerouting/postrouting, want 3/3 (two remaps, one external IP)", n, m)
	}
	pre, post := got[ChainRawPrerouting][2], got[ChainPostrouting][2]
	if cmp := pre[4].(*expr.Cmp); !bytes.Equal(pre[3].(*expr.Bitwise).Mask, []byte{255, 255, 255, 255}) || !bytes.Equal(cmp.Data, []byte{10, 80, 0, 5}) ||
		pre[2].(*expr.Payload).Offset != dstOffset {
		t.Errorf("from the tunnel: matches %v, want the destination 10.80.0.5 exactly", pre[2:5])
	}
	if cmp := post[4].(*expr.Cmp); !bytes.Equal(cmp.Data, []byte{10, 96, 0, 10}) || post[2].(*expr.Payload).Offset != srcOffset {
		t.Errorf("into the tunnel: matches %v, want the source 10.96.0.10", post[2:5])
	}
	inNewNetns(t, func() error {
		if err := r.Sync(); err != nil {
			return err
		}
		st, err := r.Installed()
		if err != nil {
			return err
		}
		if st.Netmaps != 4 || st.ExternalIPs != 2 || !slices.Equal(st.ExternalIPWrites, []string{"dst=10.96.0.10", "src=10.80.0.5"}) {
			t.Errorf("in the kernel: %+v, want 4 remap rewrites and the external IP's two (dst=10.96.0.10, src=10.80.0.5)", st)
		}
		r.ExternalIPs = nil
		if err := r.Sync(); err != nil {
			return err
		}
		if st, err = r.Installed(); err != nil || st.ExternalIPs != 0 || st.Netmaps != 4 {
			t.Errorf("after the external IP went: %+v (%v), want the remaps' rewrites only", st, err)
		}
		return r.Remove()
	})
}

// TestExternalIPRejectsIPv6: an external IP that is not IPv4 is an error naming it.
func TestExternalIPRejectsIPv6(t *testing.T) {
	r := Rules{Interface: "x", MTU: 1400, ExternalIPs: []ExternalIP{{Local: net.ParseIP("fd00::10"), External: net.ParseIP("10.80.0.5")}}}
	if _, err := r.rules(); err == nil || !strings.Contains(err.Error(), "external IP 10.80.0.5->fd00::10: only IPv4") {
		t.Errorf("error %v, want one naming the external IP and IPv4", err)
	}
}
