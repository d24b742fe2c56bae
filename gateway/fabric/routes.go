package fabric

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Protocol marks the fabric's rules and routes (the "proto" of `ip rule` and `ip route`), so that
// it finds and removes them, and only them, whatever their tables. No routing daemon registered
// in iproute2's rt_protos uses it.
const Protocol = 0x4c

// TableID is the routing table of a table name: the first 31 bits of the name's SHA-256, kept
// above 255 (the kernel's own tables), as upstream derives it.
func TableID(name string) int {
	sum := sha256.Sum256([]byte(name))
	id := binary.LittleEndian.Uint32(sum[:4]) & 0x7fffffff
	return int(id | 0x100)
}

// ruleKey identifies a rule: its table and matches, and its priority when one is asked for.
func ruleKey(table int, dst, src netip.Prefix, iif string, mark uint32, prio int) string {
	return fmt.Sprintf("%d|%s|%s|%s|%d|%d", table, dst, src, iif, mark, prio)
}

// netlinkRule is r of table as a netlink rule.
func netlinkRule(table int, r Rule) *netlink.Rule {
	nr := netlink.NewRule()
	nr.Family = unix.AF_INET
	nr.Table = table
	nr.Protocol = Protocol
	nr.Dst, nr.Src = ipNet(r.Dst), ipNet(r.Src)
	nr.IifName = r.Iif
	nr.Mark = r.FwMark
	if r.Priority > 0 {
		nr.Priority = r.Priority
	}
	return nr
}

// ipNet is p as a *net.IPNet (nil for the zero prefix).
func ipNet(p netip.Prefix) *net.IPNet {
	if !p.IsValid() {
		return nil
	}
	p = p.Masked()
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// prefix is n as a netip.Prefix (zero for nil).
func prefix(n *net.IPNet) netip.Prefix {
	if n == nil {
		return netip.Prefix{}
	}
	addr, _ := netip.AddrFromSlice(n.IP.To4())
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(addr, ones)
}

// syncRules makes the fabric's rules exactly those of tables: it adds the missing ones and
// deletes the others. A rule without a priority matches an existing one of any priority.
func syncRules(tables []Table) (added, removed int, err error) {
	existing, err := ownRules()
	if err != nil {
		return 0, 0, err
	}
	// Keys with the priority, and without it (priority 0) for rules that leave it to the kernel.
	have, want := map[string]bool{}, map[string]bool{}
	for _, r := range existing {
		have[ruleKey(r.Table, prefix(r.Dst), prefix(r.Src), r.IifName, r.Mark, r.Priority)] = true
		have[ruleKey(r.Table, prefix(r.Dst), prefix(r.Src), r.IifName, r.Mark, 0)] = true
	}
	for _, t := range tables {
		id := TableID(t.Name)
		for _, r := range t.Rules {
			key := ruleKey(id, r.Dst, r.Src, r.Iif, r.FwMark, r.Priority)
			want[key] = true
			if have[key] {
				continue
			}
			if err := netlink.RuleAdd(netlinkRule(id, r)); err != nil {
				return added, removed, fmt.Errorf("table %s: adding rule %s: %w", t.Name, describeRule(r), err)
			}
			have[key] = true
			added++
		}
	}
	for _, r := range existing {
		if want[ruleKey(r.Table, prefix(r.Dst), prefix(r.Src), r.IifName, r.Mark, r.Priority)] ||
			want[ruleKey(r.Table, prefix(r.Dst), prefix(r.Src), r.IifName, r.Mark, 0)] {
			continue
		}
		if err := netlink.RuleDel(&r); err != nil && !errors.Is(err, unix.ENOENT) {
			return added, removed, fmt.Errorf("deleting rule %d (table %d): %w", r.Priority, r.Table, err)
		}
		removed++
	}
	return added, removed, nil
}

// ownRules lists the fabric's rules (netlink's rule filter ignores the protocol).
func ownRules() ([]netlink.Rule, error) {
	all, err := netlink.RuleList(netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("listing policy-routing rules: %w", err)
	}
	var own []netlink.Rule
	for _, r := range all {
		if r.Protocol == Protocol {
			own = append(own, r)
		}
	}
	return own, nil
}

// describeRule is r as `ip rule` would show its matches.
func describeRule(r Rule) string {
	s := "from all"
	if r.Src.IsValid() {
		s = "from " + r.Src.String()
	}
	if r.Dst.IsValid() {
		s += " to " + r.Dst.String()
	}
	if r.Iif != "" {
		s += " iif " + r.Iif
	}
	if r.FwMark != 0 {
		s += fmt.Sprintf(" fwmark %#x", r.FwMark)
	}
	return s
}

// routeKey identifies a route of a table: destination, next hop and output link (0: any).
func routeKey(table int, dst netip.Prefix, gw netip.Addr, link int) string {
	return fmt.Sprintf("%d|%s|%s|%d", table, dst.Masked(), gw, link)
}

// desiredRoute is one route wanted in a table, with its output link resolved.
type desiredRoute struct {
	table int
	route Route
	link  int
}

// resolveRoutes lists the routes of tables, link-scope ones first (the next hops of the others
// resolve through them), with their output links' indexes.
func resolveRoutes(tables []Table) ([]desiredRoute, error) {
	var out []desiredRoute
	for _, t := range tables {
		id := TableID(t.Name)
		for _, r := range t.Rules {
			for _, rt := range r.Routes {
				dr := desiredRoute{table: id, route: rt}
				if rt.Dev != "" {
					l, err := netlink.LinkByName(rt.Dev)
					if err != nil {
						return nil, fmt.Errorf("table %s: route to %s: finding link %s: %w", t.Name, rt.Dst, rt.Dev, err)
					}
					dr.link = l.Attrs().Index
				}
				out = append(out, dr)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return !out[i].route.Gw.IsValid() && out[j].route.Gw.IsValid() })
	return out, nil
}

// syncRoutes makes the fabric's routes, in every table, exactly those of tables.
func syncRoutes(tables []Table) (added, removed int, err error) {
	want, err := resolveRoutes(tables)
	if err != nil {
		return 0, 0, err
	}
	existing, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_UNSPEC, Protocol: Protocol},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return 0, 0, fmt.Errorf("listing routes: %w", err)
	}
	have, keep := map[string]bool{}, map[string]bool{}
	for _, r := range existing {
		gw, _ := netip.AddrFromSlice(r.Gw.To4())
		have[routeKey(r.Table, prefix(r.Dst), gw, r.LinkIndex)], have[routeKey(r.Table, prefix(r.Dst), gw, 0)] = true, true
	}
	for _, dr := range want {
		key := routeKey(dr.table, dr.route.Dst, dr.route.Gw, dr.link)
		keep[routeKey(dr.table, dr.route.Dst, dr.route.Gw, 0)] = true
		if have[key] {
			continue
		}
		if err := netlink.RouteReplace(netlinkRoute(dr)); err != nil {
			return added, removed, fmt.Errorf("adding route %s via %s dev %s (table %d): %w", dr.route.Dst, dr.route.Gw, dr.route.Dev, dr.table, err)
		}
		have[key] = true
		added++
	}
	for _, r := range existing {
		gw, _ := netip.AddrFromSlice(r.Gw.To4())
		if keep[routeKey(r.Table, prefix(r.Dst), gw, 0)] {
			continue
		}
		if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
			return added, removed, fmt.Errorf("deleting route %s (table %d): %w", r.Dst, r.Table, err)
		}
		removed++
	}
	return added, removed, nil
}

// netlinkRoute is dr as a netlink route marked with Protocol; a next hop on a given link is
// taken as on-link.
func netlinkRoute(dr desiredRoute) *netlink.Route {
	r := &netlink.Route{Dst: ipNet(dr.route.Dst), LinkIndex: dr.link, Table: dr.table, Protocol: Protocol}
	switch {
	case dr.route.Gw.IsValid() && dr.link != 0:
		// The next hop is the tunnel's other end: on the link, whichever table holds its route.
		r.Gw, r.Flags = net.IP(dr.route.Gw.AsSlice()), int(netlink.FLAG_ONLINK)
	case dr.route.Gw.IsValid():
		r.Gw = net.IP(dr.route.Gw.AsSlice())
	default:
		r.Scope = netlink.SCOPE_LINK
	}
	return r
}
