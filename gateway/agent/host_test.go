package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/peerkit/terraform-provider-liqo/gateway/nat"
	"github.com/peerkit/terraform-provider-liqo/gateway/tunnel"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// gatewayHost makes a throwaway network namespace standing for a gateway's host and returns
// its name; the test skips unless it may make namespaces and TUN devices.
func gatewayHost(t *testing.T) string {
	t.Helper()
	testenv.RequireNetAdmin(t)
	return testenv.NewNetns(t, "lqag-")
}

// inHost runs fn in the network namespace host (the thread that runs it is there, the rest of
// the process is not), failing the test when fn fails.
func inHost(t *testing.T, host string, fn func() error) {
	t.Helper()
	if err := netns.Do(netns.Named(host), fn); err != nil {
		t.Fatalf("in network namespace %s: %v", host, err)
	}
}

// ip runs ip(8) in the network namespace host, failing the test when it fails.
func ip(t *testing.T, host string, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", append([]string{"-n", host}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip -n %s %s: %v\n%s", host, strings.Join(args, " "), err, out)
	}
}

// underlay gives the network namespace host an underlay link (a veth pair, both ends in host)
// of MTU mtu holding the default route.
func underlay(t *testing.T, host string, mtu int) {
	t.Helper()
	m := strconv.Itoa(mtu)
	ip(t, host, "link", "add", "ul0", "mtu", m, "type", "veth", "peer", "name", "ul1", "mtu", m)
	ip(t, host, "addr", "add", "192.0.2.1/24", "dev", "ul0")
	ip(t, host, "link", "set", "ul0", "up")
	ip(t, host, "link", "set", "ul1", "up")
	ip(t, host, "route", "add", "default", "via", "192.0.2.254")
}

// hostState is what a gateway made on its host.
type hostState struct {
	link       bool     // the tunnel interface exists
	up         bool     // it is up
	mtu        int      // its MTU
	addrs      []string // its IPv4 addresses
	routes     []string // the routes through it in the main table, the link's own subnet aside
	rules      nat.State
	rulesErr   error  // nat.ErrNoTable when the gateway has no nftables table
	fwmarkRule bool   // the rule of gateways before the stateless remap is there
	forwarding string // net.ipv4.ip_forward
}

// readHost reads the state of a's interface, routes and rules in the network namespace host.
func readHost(t *testing.T, host string, a *Agent) hostState {
	t.Helper()
	var st hostState
	inHost(t, host, func() error {
		fwd, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
		if err != nil {
			return err
		}
		st.forwarding = strings.TrimSpace(string(fwd))
		rules, err := netlink.RuleList(netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		st.fwmarkRule = slices.ContainsFunc(rules, func(r netlink.Rule) bool {
			return int(r.Mark) == a.opts.RouteTable && r.Table == a.opts.RouteTable
		})
		st.rules, st.rulesErr = nat.Rules{Interface: a.opts.Interface}.Installed()
		l, err := netlink.LinkByName(a.opts.Interface)
		if errors.As(err, new(netlink.LinkNotFoundError)) {
			return nil
		}
		if err != nil {
			return err
		}
		st.link, st.up, st.mtu = true, l.Attrs().Flags&net.FlagUp != 0, l.Attrs().MTU
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		for _, ad := range addrs {
			st.addrs = append(st.addrs, ad.IPNet.String())
		}
		routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{LinkIndex: l.Attrs().Index, Table: unix.RT_TABLE_MAIN},
			netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
		if err != nil {
			return err
		}
		for _, r := range routes {
			if r.Protocol != unix.RTPROT_KERNEL {
				st.routes = append(st.routes, r.Dst.String())
			}
		}
		slices.Sort(st.routes)
		return nil
	})
	return st
}

// wgDevice reads the WireGuard device of interface ifc through its UAPI socket.
func wgDevice(t *testing.T, ifc string) *wgtypes.Device {
	t.Helper()
	c, err := wgctrl.New()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	dev, err := c.Device(ifc)
	if err != nil {
		t.Fatalf("reading WireGuard device %s: %v", ifc, err)
	}
	return dev
}

// shutdownAtEnd shuts a down in host when the test ends, in case the test did not get there.
func shutdownAtEnd(t *testing.T, host string, a *Agent) {
	t.Helper()
	t.Cleanup(func() {
		if a.dev == nil {
			return
		}
		select {
		case <-a.dev.Done():
			return // the test shut it down
		default:
		}
		_ = netns.Do(netns.Named(host), a.shutdown)
		_ = os.Remove(tunnel.SocketPath(a.opts.Interface))
	})
}

// addOldGatewayRule adds the policy-routing rule gateways before the stateless remap kept:
// packets marked mark go to the routing table of the same number.
func addOldGatewayRule(mark int) error {
	r := netlink.NewRule()
	r.Mark = uint32(mark)
	r.Table = mark
	r.Priority = 100
	if err := netlink.RuleAdd(r); err != nil {
		return fmt.Errorf("adding the fwmark %d rule: %w", mark, err)
	}
	return nil
}
