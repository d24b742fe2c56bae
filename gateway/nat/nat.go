// Package nat writes a gateway's packet rules through nftables (netlink, no binary needed, so the
// gateway image holds nothing but the gateway): NETMAP-style prefix NAT for the remote networks
// the local cluster remaps, and a TCP MSS clamp on the tunnel.
//
// A remap says the local cluster sees a remote network Real (e.g. 10.1.0.0/16, overlapping its
// own pods) as Mapped (e.g. 10.71.0.0/16). The gateway translates on its own, from the local
// Configuration alone, and without state: the local cluster routes Mapped into the tunnel (a
// route in the main table), and
//
//   - what goes into the tunnel to Mapped leaves with its destination rewritten to the same host
//     in Real (postrouting, after routing and after every NAT of the host, such as kube-proxy's
//     DNAT of a Service to an endpoint in Mapped);
//   - what comes out of the tunnel from Real arrives with its source rewritten to the same host
//     in Mapped (prerouting, before conntrack: the host's connections only ever see Mapped).
//
// Both rewrites update the IP and TCP/UDP checksums. Being stateless, they hold for
// connections either side opens, and they never compete with the host's own NAT for a
// connection (kube-proxy's Services, a CNI's masquerading): conntrack allows one destination
// NAT per connection, which a Service's DNAT to a remapped endpoint has already taken.
//
// The gateway also exposes single local addresses under addresses of the local cluster's
// external CIDR (ExternalIP: an ipam.liqo.io IP's spec.ip and status.ip), which the peer routes
// into the tunnel like every other network of the cluster:
//
//   - what comes out of the tunnel to External arrives with its destination rewritten to Local
//     (raw prerouting, before conntrack and before routing: the host delivers or forwards it to
//     Local, and kube-proxy's DNAT of a Service's cluster IP still applies after it);
//   - what goes into the tunnel from Local leaves with its source rewritten to External
//     (postrouting, last: after the host's reverse NAT restored a Service's cluster IP).
//
// These are stateless too, with the same checksum updates, and independent of the remaps: a
// remap rewrites the peer's addresses, an external IP the local cluster's.
//
// Every rule lives in one nftables table of the gateway's own (family ip, named after its
// interface), so that Sync replaces it atomically and Remove never touches anybody else's rules
// (kube-proxy's, a CNI's, another gateway's).
package nat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/peerkit/terraform-provider-liqo/internal/remap"
)

// Remap is one remote network and how the local cluster sees it.
type Remap = remap.Remap

// Rules are the rules of one gateway.
type Rules struct {
	// Interface is the tunnel interface.
	Interface string
	// MTU is the tunnel MTU; the clamp keeps TCP segments within it.
	MTU int
	// Remaps are the remapped remote networks.
	Remaps []Remap
	// ExternalIPs are the local addresses exposed to the peer under addresses of the local
	// cluster's external CIDR.
	ExternalIPs []ExternalIP
}

// ExternalIP is a local address and the address of the local cluster's external CIDR that the
// peer reaches it at (an ipam.liqo.io IP's spec.ip and status.ip).
type ExternalIP struct {
	// Local is the address in the local cluster (e.g. a Service's cluster IP).
	Local net.IP
	// External is the address the peer reaches Local at.
	External net.IP
}

// String is "External->Local".
func (e ExternalIP) String() string { return e.External.String() + "->" + e.Local.String() }

// TablePrefix starts the name of every gateway's table ("liqo-" + interface).
const TablePrefix = "liqo-"

// Table is the name of the gateway's nftables table (family ip).
func (r Rules) Table() string { return TablePrefix + r.Interface }

// Chain names in the gateway's table, one per hook.
const (
	ChainMangleForward = "mangle-forward"
	// ChainRawPrerouting rewrites the source (remaps) and the destination (external IPs) of
	// what comes out of the tunnel, before conntrack.
	ChainRawPrerouting = "raw-prerouting"
	// ChainPostrouting rewrites the destination (remaps) and the source (external IPs) of what
	// goes into the tunnel, last.
	ChainPostrouting = "postrouting"
)

// postroutingPriority runs the destination rewrite after the host's source NAT (100).
var postroutingPriority = nftables.ChainPriorityRef(300)

// chains are the table's base chains.
func chains(t *nftables.Table) map[string]*nftables.Chain {
	base := func(name string, hook *nftables.ChainHook, prio *nftables.ChainPriority) *nftables.Chain {
		return &nftables.Chain{Name: name, Table: t, Type: nftables.ChainTypeFilter, Hooknum: hook, Priority: prio}
	}
	return map[string]*nftables.Chain{
		ChainMangleForward: base(ChainMangleForward, nftables.ChainHookForward, nftables.ChainPriorityMangle),
		ChainRawPrerouting: base(ChainRawPrerouting, nftables.ChainHookPrerouting, nftables.ChainPriorityRaw),
		ChainPostrouting:   base(ChainPostrouting, nftables.ChainHookPostrouting, postroutingPriority),
	}
}

// chainOrder is the order chains are written in (a fixed one, for stable batches).
var chainOrder = []string{ChainMangleForward, ChainRawPrerouting, ChainPostrouting}

// rules are the expressions of each chain's rules, in order.
func (r Rules) rules() (map[string][][]expr.Any, error) {
	if r.MTU <= 40 || r.MTU > 65535 {
		return nil, fmt.Errorf("tunnel MTU %d is out of range (41-65535)", r.MTU)
	}
	out := map[string][][]expr.Any{}
	mss := uint16(r.MTU - 40)
	clamp := func(dir expr.MetaKey) []expr.Any {
		return concat(ifname(dir, r.Interface), tcpSYN(), mssAtLeast(mss+1), setMSS(mss))
	}
	out[ChainMangleForward] = [][]expr.Any{clamp(expr.MetaKeyOIFNAME), clamp(expr.MetaKeyIIFNAME)}
	for _, m := range r.Remaps {
		real, mapped, err := v4(m)
		if err != nil {
			return nil, err
		}
		out[ChainRawPrerouting] = append(out[ChainRawPrerouting],
			concat(ifname(expr.MetaKeyIIFNAME, r.Interface), addrIn(srcOffset, real), rewrite(srcOffset, mapped)))
		out[ChainPostrouting] = append(out[ChainPostrouting],
			concat(ifname(expr.MetaKeyOIFNAME, r.Interface), addrIn(dstOffset, mapped), rewrite(dstOffset, real)))
	}
	for _, e := range r.ExternalIPs {
		local, external := e.Local.To4(), e.External.To4()
		if local == nil || external == nil {
			return nil, fmt.Errorf("external IP %s: only IPv4 addresses are supported", e)
		}
		host := func(ip net.IP) net.IPNet { return net.IPNet{IP: ip, Mask: net.CIDRMask(32, 32)} }
		out[ChainRawPrerouting] = append(out[ChainRawPrerouting],
			concat(ifname(expr.MetaKeyIIFNAME, r.Interface), addrIn(dstOffset, host(external)), rewrite(dstOffset, host(local))))
		out[ChainPostrouting] = append(out[ChainPostrouting],
			concat(ifname(expr.MetaKeyOIFNAME, r.Interface), addrIn(srcOffset, host(local)), rewrite(srcOffset, host(external))))
	}
	return out, nil
}

// Sync writes the rules: it replaces the gateway's table, in one transaction, with one holding
// exactly these rules.
func (r Rules) Sync() error {
	rules, err := r.rules()
	if err != nil {
		return fmt.Errorf("nftables table %s: %w", r.Table(), err)
	}
	conn, t, err := r.deleteTable()
	if err != nil {
		return err
	}
	conn.AddTable(t)
	cs := chains(t)
	for _, name := range chainOrder {
		c := conn.AddChain(cs[name])
		for _, exprs := range rules[name] {
			conn.AddRule(&nftables.Rule{Table: t, Chain: c, Exprs: exprs})
		}
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("writing nftables table %s: %w", r.Table(), err)
	}
	return nil
}

// Remove deletes the gateway's table. A missing one is not an error.
func (r Rules) Remove() error {
	conn, _, err := r.deleteTable()
	if err != nil {
		return err
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("removing nftables table %s: %w", r.Table(), err)
	}
	return nil
}

// deleteTable opens nftables and starts a batch that deletes the gateway's table, existing or
// not; it returns the connection, to add to the batch and flush it, and the table.
func (r Rules) deleteTable() (*nftables.Conn, *nftables.Table, error) {
	conn, err := nftables.New()
	if err != nil {
		return nil, nil, fmt.Errorf("opening nftables: %w", err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: r.Table()}
	// Adding first makes the deletion valid when the table does not exist yet.
	conn.AddTable(t)
	conn.DelTable(t)
	return conn, t, nil
}

// Header offsets of IPv4 addresses.
const (
	srcOffset = 12
	dstOffset = 16
)

func concat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// v4 checks that both networks of a remap are IPv4 and have the same size.
func v4(m Remap) (real, mapped net.IPNet, err error) {
	for _, n := range []*net.IPNet{&m.Real, &m.Mapped} {
		if n.IP.To4() == nil || len(n.Mask) != net.IPv4len && len(n.Mask) != net.IPv6len {
			return real, mapped, fmt.Errorf("remap %s to %s: only IPv4 networks are supported", m.Real.String(), m.Mapped.String())
		}
	}
	ro, rb := m.Real.Mask.Size()
	mo, mb := m.Mapped.Mask.Size()
	if ro != mo || rb-ro != mb-mo {
		return real, mapped, fmt.Errorf("remap %s to %s: the networks differ in size", m.Real.String(), m.Mapped.String())
	}
	norm := func(n net.IPNet) net.IPNet {
		mask := net.CIDRMask(ro, 32)
		return net.IPNet{IP: n.IP.To4().Mask(mask), Mask: mask}
	}
	return norm(m.Real), norm(m.Mapped), nil
}

// ifname matches the input or output interface name.
func ifname(key expr.MetaKey, name string) []expr.Any {
	data := make([]byte, unix.IFNAMSIZ)
	copy(data, name)
	return []expr.Any{
		&expr.Meta{Key: key, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data},
	}
}

// addrIn matches the source or destination address (offset) against a network.
func addrIn(offset uint32, n net.IPNet) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: net.IPv4len},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: net.IPv4len, Mask: []byte(n.Mask), Xor: make([]byte, net.IPv4len)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte(n.IP.To4())},
	}
}

// rewrite sets the address at offset (source or destination) to the same host in network to,
// updating the IP header's checksum and the TCP or UDP checksum (whose pseudo-header holds the
// addresses).
func rewrite(offset uint32, to net.IPNet) []expr.Any {
	host := make([]byte, net.IPv4len)
	for i := range host {
		host[i] = ^to.Mask[len(to.Mask)-net.IPv4len+i]
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: net.IPv4len},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: net.IPv4len, Mask: host, Xor: []byte(to.IP.To4())},
		&expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset,
			Len: net.IPv4len, CsumType: expr.CsumTypeInet, CsumOffset: ipChecksumOffset, CsumFlags: unix.NFT_PAYLOAD_L4CSUM_PSEUDOHDR},
	}
}

// ipChecksumOffset is where the IPv4 header holds its checksum.
const ipChecksumOffset = 10

// tcpSYN matches TCP segments with SYN set and RST not set.
func tcpSYN() []expr.Any {
	const syn, rst = 0x02, 0x04
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{syn | rst}, Xor: []byte{0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{syn}},
	}
}

// TCP option "maximum segment size": kind 2, its value 2 bytes in.
const (
	tcpOptMSS       = 2
	tcpOptMSSOffset = 2
	tcpOptMSSLen    = 2
)

// mssAtLeast matches segments whose MSS option is at least min (none without the option).
func mssAtLeast(minMSS uint16) []expr.Any {
	return []expr.Any{
		&expr.Exthdr{Op: expr.ExthdrOpTcpopt, Type: tcpOptMSS, Offset: tcpOptMSSOffset, Len: tcpOptMSSLen, DestRegister: 1},
		&expr.Cmp{Op: expr.CmpOpGte, Register: 1, Data: binary.BigEndian.AppendUint16(nil, minMSS)},
	}
}

// setMSS rewrites the MSS option.
func setMSS(mss uint16) []expr.Any {
	return []expr.Any{
		&expr.Immediate{Register: 1, Data: binary.BigEndian.AppendUint16(nil, mss)},
		&expr.Exthdr{Op: expr.ExthdrOpTcpopt, Type: tcpOptMSS, Offset: tcpOptMSSOffset, Len: tcpOptMSSLen, SourceRegister: 1},
	}
}

// ErrNoTable is returned by Installed when the gateway has no table.
var ErrNoTable = errors.New("no nftables table")

// State is what the kernel holds of a gateway's table, for tests and diagnostics.
type State struct {
	// Rules counts the rules of each chain.
	Rules map[string]int
	// ClampMSS is the value the forward chain writes into TCP's MSS option (0: no clamp).
	ClampMSS int
	// Netmaps counts the address rewrites of the remaps (two per remap: one each way).
	Netmaps int
	// ExternalIPs counts the address rewrites of the external IPs (two per external IP: one
	// each way).
	ExternalIPs int
	// ExternalIPWrites are the addresses the external IPs' rewrites write, in chain order:
	// "dst=<Local>" coming out of the tunnel, then "src=<External>" going into it.
	ExternalIPWrites []string
}

// Tables lists the gateways' tables (named TablePrefix + interface) in this network namespace:
// what the gateways there have installed, and what one left if it died before removing its own.
func Tables() ([]string, error) {
	conn, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("opening nftables: %w", err)
	}
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, fmt.Errorf("listing nftables tables: %w", err)
	}
	var out []string
	for _, t := range tables {
		if strings.HasPrefix(t.Name, TablePrefix) {
			out = append(out, t.Name)
		}
	}
	return out, nil
}

// Installed reads the gateway's table back from the kernel; ErrNoTable when it does not exist.
func (r Rules) Installed() (State, error) {
	conn, err := nftables.New()
	if err != nil {
		return State{}, fmt.Errorf("opening nftables: %w", err)
	}
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return State{}, fmt.Errorf("listing nftables tables: %w", err)
	}
	var t *nftables.Table
	for _, candidate := range tables {
		if candidate.Name == r.Table() {
			t = candidate
		}
	}
	if t == nil {
		return State{}, fmt.Errorf("table %s: %w", r.Table(), ErrNoTable)
	}
	st := State{Rules: map[string]int{}}
	for _, name := range chainOrder {
		rules, err := conn.GetRules(t, &nftables.Chain{Name: name, Table: t})
		if err != nil {
			return State{}, fmt.Errorf("reading chain %s of table %s: %w", name, r.Table(), err)
		}
		st.Rules[name] = len(rules)
		for _, rule := range rules {
			st.read(name, rule.Exprs)
		}
	}
	return st, nil
}

// read notes the clamp's value and the address rewrites of one rule of chain: a remap rewrites
// the source coming out of the tunnel and the destination going in, an external IP the other
// way round.
func (st *State) read(chain string, exprs []expr.Any) {
	var value, xor []byte
	for _, e := range exprs {
		switch e := e.(type) {
		case *expr.Bitwise:
			xor = e.Xor
		case *expr.Immediate:
			value = e.Data
		case *expr.Exthdr:
			if e.SourceRegister != 0 && e.Type == tcpOptMSS && len(value) == tcpOptMSSLen {
				st.ClampMSS = int(binary.BigEndian.Uint16(value))
			}
		case *expr.Payload:
			if e.OperationType != expr.PayloadWrite || e.Base != expr.PayloadBaseNetworkHeader || (e.Offset != srcOffset && e.Offset != dstOffset) {
				continue
			}
			if (chain == ChainRawPrerouting) == (e.Offset == srcOffset) {
				st.Netmaps++
			} else {
				st.ExternalIPs++
				field := map[uint32]string{srcOffset: "src", dstOffset: "dst"}[e.Offset]
				st.ExternalIPWrites = append(st.ExternalIPWrites, field+"="+net.IP(xor).String())
			}
		}
	}
}
