// Package netcfg sets a gateway's addresses, MTU and routes through netlink, and removes the
// policy-routing rule of older gateways, in the network namespace of the calling process.
package netcfg

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// SetUp gives link the address addr (replacing any other IPv4 address), the MTU mtu, and sets it
// up.
func SetUp(link string, addr *net.IPNet, mtu int) error {
	l, err := netlink.LinkByName(link)
	if err != nil {
		return fmt.Errorf("finding link %s: %w", link, err)
	}
	if l.Attrs().MTU != mtu {
		if err := netlink.LinkSetMTU(l, mtu); err != nil {
			return fmt.Errorf("setting MTU %d on %s: %w", mtu, link, err)
		}
	}
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("listing addresses of %s: %w", link, err)
	}
	for _, a := range addrs {
		if !a.IP.Equal(addr.IP) || a.Mask.String() != addr.Mask.String() {
			if err := netlink.AddrDel(l, &a); err != nil {
				return fmt.Errorf("removing address %s from %s: %w", a.IPNet, link, err)
			}
		}
	}
	if err := netlink.AddrReplace(l, &netlink.Addr{IPNet: addr}); err != nil {
		return fmt.Errorf("adding address %s to %s: %w", addr, link, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("setting %s up: %w", link, err)
	}
	return nil
}

// SyncRoutes makes the routes through link in table exactly dsts (table 0 is the main table).
func SyncRoutes(link string, table int, dsts []net.IPNet) error {
	l, err := netlink.LinkByName(link)
	if err != nil {
		return fmt.Errorf("finding link %s: %w", link, err)
	}
	if table == 0 {
		table = unix.RT_TABLE_MAIN
	}
	want := map[string]net.IPNet{}
	for _, d := range dsts {
		want[d.String()] = d
	}
	existing, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{LinkIndex: l.Attrs().Index, Table: table},
		netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
	if err != nil {
		return fmt.Errorf("listing routes of %s: %w", link, err)
	}
	for _, r := range existing {
		if r.Protocol == unix.RTPROT_KERNEL {
			continue // the link's own subnet
		}
		key := "0.0.0.0/0"
		if r.Dst != nil {
			key = r.Dst.String()
		}
		if _, ok := want[key]; ok {
			delete(want, key)
			continue
		}
		if err := netlink.RouteDel(&r); err != nil {
			return fmt.Errorf("removing route %s from %s: %w", key, link, err)
		}
	}
	for _, d := range want {
		r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: &d, Table: table, Scope: netlink.SCOPE_LINK}
		if err := netlink.RouteReplace(r); err != nil {
			return fmt.Errorf("adding route %s through %s (table %d): %w", d.String(), link, table, err)
		}
	}
	return nil
}

// DeleteRule removes the rules sending packets carrying fwmark mark to routing table table, if
// any (gateways before the stateless remap added one).
func DeleteRule(mark, table int) error {
	rules, err := netlink.RuleList(netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("listing rules: %w", err)
	}
	for _, r := range rules {
		if r.Mark == uint32(mark) && r.Table == table { //nolint:gosec // marks are small positive numbers
			if err := netlink.RuleDel(&r); err != nil {
				return fmt.Errorf("removing rule fwmark %d lookup %d: %w", mark, table, err)
			}
		}
	}
	return nil
}

// UnderlayMTU returns the MTU of the interface that reaches dst (nil: the default route's).
// Without such a route it returns the smallest MTU among the up, non-loopback interfaces other
// than exclude.
func UnderlayMTU(dst net.IP, exclude string) (int, error) {
	if dst != nil {
		if routes, err := netlink.RouteGet(dst); err == nil && len(routes) > 0 {
			if l, err := netlink.LinkByIndex(routes[0].LinkIndex); err == nil {
				return l.Attrs().MTU, nil
			}
		}
	} else if routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE); err == nil {
		for _, r := range routes {
			if r.Dst == nil || r.Dst.String() == "0.0.0.0/0" {
				if l, err := netlink.LinkByIndex(r.LinkIndex); err == nil && l.Attrs().Name != exclude {
					return l.Attrs().MTU, nil
				}
			}
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		return 0, fmt.Errorf("listing links: %w", err)
	}
	mtu := 0
	for _, l := range links {
		a := l.Attrs()
		if a.Name == exclude || a.Flags&net.FlagLoopback != 0 || a.Flags&net.FlagUp == 0 {
			continue
		}
		if mtu == 0 || a.MTU < mtu {
			mtu = a.MTU
		}
	}
	if mtu == 0 {
		return 0, errors.New("no interface to take the underlay MTU from")
	}
	return mtu, nil
}

// EnableForwarding turns IPv4 forwarding on in the current network namespace (new namespaces
// start with it off).
func EnableForwarding() error {
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("enabling IPv4 forwarding: %w", err)
	}
	return nil
}
