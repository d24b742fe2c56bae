package fabric

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
)

// Desired is everything the fabric wants in one network namespace (a node's host network, or a
// gateway's). Apply makes the namespace hold exactly this; the zero value removes everything.
type Desired struct {
	// Tunnels are the tunnel links, one per remote end.
	Tunnels []Tunnel `json:"tunnels,omitempty"`
	// Tables are the policy-routing tables, with their rules and routes.
	Tables []Table `json:"tables,omitempty"`
	// Firewalls are the nftables tables.
	Firewalls []Firewall `json:"firewalls,omitempty"`
}

// Merge is the Desired of several in one network namespace (several gateways hosted on one
// node, and the node's own side): their tunnels and tables side by side, and the nftables
// tables of the same name (the gateways' "service-nodeport-routing" and
// "gateway-masquerade-bypass") as one, with the rules of each in order and none twice.
func Merge(ds ...Desired) Desired {
	var out Desired
	at := map[string]int{}
	for _, d := range ds {
		out.Tunnels = append(out.Tunnels, d.Tunnels...)
		out.Tables = append(out.Tables, d.Tables...)
		for _, f := range d.Firewalls {
			i, ok := at[f.Name]
			if !ok {
				at[f.Name] = len(out.Firewalls)
				out.Firewalls = append(out.Firewalls, Firewall{Name: f.Name})
				i = len(out.Firewalls) - 1
			}
			m := &out.Firewalls[i]
			m.SNAT = appendNew(m.SNAT, f.SNAT, func(a, b SNAT) bool {
				return a.Dst == b.Dst && a.Src == b.Src && a.To == b.To && slices.Equal(a.NotSrc, b.NotSrc)
			})
			m.CtMarks = appendNew(m.CtMarks, f.CtMarks, func(a, b CtMark) bool { return a == b })
			m.MarkRestores = appendNew(m.MarkRestores, f.MarkRestores, func(a, b MarkRestore) bool { return a == b })
		}
	}
	return out
}

// appendNew appends to into the items of from that into does not hold yet (by eq).
func appendNew[T any](into, from []T, eq func(a, b T) bool) []T {
	for _, x := range from {
		if !slices.ContainsFunc(into, func(y T) bool { return eq(x, y) }) {
			into = append(into, x)
		}
	}
	return into
}

// Tunnel is one tunnel link (upstream: a GeneveTunnel, on the side of a node or of a gateway).
type Tunnel struct {
	// Name is the link's name (upstream: InternalFabric.spec.interface.node.name on a node,
	// InternalNode.spec.interface.gateway.name on a gateway; "liqo." and 10 characters).
	Name string `json:"name"`
	// ID is the tunnel's identifier (GeneveTunnel.spec.id): the Geneve or VXLAN network
	// identifier, 0 to 16777215 (upstream's manager hands them out from 0).
	ID uint32 `json:"id"`
	// Remote is the other end's address on the node network (a gateway's node or pod address
	// seen from a node, a node's address seen from a gateway).
	Remote netip.Addr `json:"remote"`
	// Address is this end's address in the internal CIDR, set on the link as a /32.
	Address netip.Addr `json:"address"`
	// MTU is the link's MTU; 0: the MTU of the path to Remote less the encapsulation's 50 bytes.
	MTU int `json:"mtu,omitempty"`
}

// Table is a routing table, the rules that send traffic to it and its routes (upstream: a
// RouteConfiguration's spec.table).
type Table struct {
	// Name names the table; its ID is derived from it (TableID).
	Name string `json:"name"`
	// Rules are the policy-routing rules and their routes.
	Rules []Rule `json:"rules"`
}

// Rule is one policy-routing rule ("ip rule ... lookup <table>") and the routes it wants in its
// table. A rule without Dst, Src, Iif and FwMark matches everything.
type Rule struct {
	// Dst matches the destination.
	Dst netip.Prefix `json:"dst,omitzero"`
	// Src matches the source.
	Src netip.Prefix `json:"src,omitzero"`
	// Iif matches the input interface.
	Iif string `json:"iif,omitempty"`
	// FwMark matches the packet mark (0: any).
	FwMark uint32 `json:"fwmark,omitempty"`
	// Priority is the rule's preference; 0 lets the kernel choose (just before the main
	// table's rule), as upstream does by default.
	Priority int `json:"priority,omitempty"`
	// Routes go into the table.
	Routes []Route `json:"routes,omitempty"`
}

// Route is one route of a table.
type Route struct {
	// Dst is the destination.
	Dst netip.Prefix `json:"dst"`
	// Gw is the next hop; without it the route has link scope (Dev is then required).
	Gw netip.Addr `json:"gw,omitzero"`
	// Dev is the output link.
	Dev string `json:"dev,omitempty"`
}

// Firewall is an nftables table of family ip (upstream: a FirewallConfiguration). Only the
// chains that have rules are created.
type Firewall struct {
	// Name is the table's name.
	Name string `json:"name"`
	// SNAT are the rules of chain "pre-postrouting" (nat, postrouting, priority srcnat-1).
	SNAT []SNAT `json:"snat,omitempty"`
	// CtMarks are the rules of chain "mark-to-conntrack" (filter, forward, priority filter).
	CtMarks []CtMark `json:"ctMarks,omitempty"`
	// MarkRestores are the rules of chain "conntrack-mark-to-meta-mark" (filter, prerouting,
	// priority filter).
	MarkRestores []MarkRestore `json:"markRestores,omitempty"`
}

// SNAT rewrites the source of new connections to Dst whose source is in Src (when set) and in
// none of NotSrc. To of the same size as Src keeps each source's host part ("snat prefix to"):
// with To equal to Src it keeps the source as it is, and the connection's source NAT is taken,
// so no later masquerading (a CNI's) applies to it.
type SNAT struct {
	// Dst matches the destination (zero: any).
	Dst netip.Prefix `json:"dst,omitzero"`
	// Src matches the source (zero: any).
	Src netip.Prefix `json:"src,omitzero"`
	// NotSrc are sources the rule does not apply to.
	NotSrc []netip.Prefix `json:"notSrc,omitempty"`
	// To is the new source: a single address (/32) or a network (prefix translation).
	To netip.Prefix `json:"to"`
}

// CtMark sets the connection mark Mark on what comes in from Iif with a source in Src.
type CtMark struct {
	// Src matches the source.
	Src netip.Prefix `json:"src"`
	// Iif matches the input interface.
	Iif string `json:"iif"`
	// Mark is the connection mark.
	Mark uint32 `json:"mark"`
}

// MarkRestore copies the connection mark to the packet mark for what comes in from Iif to Dst,
// before routing, so that a rule on the mark routes it.
type MarkRestore struct {
	// Dst matches the destination.
	Dst netip.Prefix `json:"dst"`
	// Iif matches the input interface.
	Iif string `json:"iif"`
}

// maxVNI is the largest Geneve or VXLAN network identifier (24 bits).
const maxVNI = 1<<24 - 1

// maxIfName is the longest interface name Linux takes.
const maxIfName = 15

// Validate says what is wrong with d, naming the item and the field.
func (d Desired) Validate() error {
	errs := validateList("tunnels", "another tunnel", d.Tunnels, func(t Tunnel) string { return t.Name }, Tunnel.validate)
	errs = append(errs, validateList("tables", "another table", d.Tables, func(t Table) string { return t.Name }, Table.validate)...)
	errs = append(errs, validateList("firewalls", "another nftables table (Merge joins them)", d.Firewalls,
		func(f Firewall) string { return f.Name }, Firewall.validate)...)
	return errors.Join(errs...)
}

// validateList validates each item of the list field and that no two items share a name
// (other says what the name is used by).
func validateList[T any](field, other string, items []T, name func(T) string, validate func(T, string) error) []error {
	var errs []error
	seen := map[string]bool{}
	for i, item := range items {
		errs = append(errs, validate(item, fmt.Sprintf("%s[%d]", field, i)))
		if n := name(item); seen[n] {
			errs = append(errs, fmt.Errorf("%s[%d].name: %q is used by %s", field, i, n, other))
		} else {
			seen[n] = true
		}
	}
	return errs
}

func (t Tunnel) validate(at string) error {
	var errs []error
	if t.Name == "" || len(t.Name) > maxIfName {
		errs = append(errs, fmt.Errorf("%s.name: %q must have 1 to %d characters", at, t.Name, maxIfName))
	}
	if t.ID > maxVNI {
		errs = append(errs, fmt.Errorf("%s.id: %d is out of range (0-%d)", at, t.ID, maxVNI))
	}
	if !t.Remote.Is4() {
		errs = append(errs, fmt.Errorf("%s.remote: %q must be an IPv4 address", at, t.Remote))
	}
	if !t.Address.Is4() {
		errs = append(errs, fmt.Errorf("%s.address: %q must be an IPv4 address", at, t.Address))
	}
	if t.MTU != 0 && (t.MTU < 576 || t.MTU > 65535) {
		errs = append(errs, fmt.Errorf("%s.mtu: %d is out of range (576-65535, or 0 for the path's)", at, t.MTU))
	}
	return errors.Join(errs...)
}

func (t Table) validate(at string) error {
	var errs []error
	if t.Name == "" {
		errs = append(errs, fmt.Errorf("%s.name: a table needs a name", at))
	}
	for i, r := range t.Rules {
		for j, rt := range r.Routes {
			if !rt.Dst.IsValid() {
				errs = append(errs, fmt.Errorf("%s.rules[%d].routes[%d].dst: a route needs a destination", at, i, j))
			}
			if !rt.Gw.IsValid() && rt.Dev == "" {
				errs = append(errs, fmt.Errorf("%s.rules[%d].routes[%d]: a route needs gw, dev or both", at, i, j))
			}
		}
	}
	return errors.Join(errs...)
}

func (f Firewall) validate(at string) error {
	var errs []error
	if f.Name == "" {
		errs = append(errs, fmt.Errorf("%s.name: a firewall table needs a name", at))
	}
	for i, s := range f.SNAT {
		if s.Dst.IsValid() && !s.Dst.Addr().Is4() || !s.To.Addr().Is4() {
			errs = append(errs, fmt.Errorf("%s.snat[%d]: dst (when set) and to must be IPv4 networks", at, i))
		}
		if s.To.Bits() != 32 && s.Src.IsValid() && s.To.Bits() != s.Src.Bits() {
			errs = append(errs, fmt.Errorf("%s.snat[%d].to: %s must be a single address or the size of src %s", at, i, s.To, s.Src))
		}
	}
	for i, c := range f.CtMarks {
		if c.Mark == 0 || c.Iif == "" {
			errs = append(errs, fmt.Errorf("%s.ctMarks[%d]: needs a mark other than 0 and an iif", at, i))
		}
	}
	return errors.Join(errs...)
}
