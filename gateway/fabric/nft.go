package fabric

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Chain names of a fabric table (upstream's).
const (
	// ChainSNAT holds the SNAT rules: nat, postrouting, priority srcnat-1.
	ChainSNAT = "pre-postrouting"
	// ChainCtMark holds the CtMark rules: filter, forward, priority filter.
	ChainCtMark = "mark-to-conntrack"
	// ChainMarkRestore holds the MarkRestore rules: filter, prerouting, priority filter.
	ChainMarkRestore = "conntrack-mark-to-meta-mark"
)

// userDataPrefix starts the user data of every rule of a fabric table, followed by the digest of
// the table's Firewall: it tells the fabric's tables from others and whether one is up to date.
const userDataPrefix = "liqo-fabric:"

// digest is the user data of f's rules: userDataPrefix and a hash of f.
func (f Firewall) digest() []byte {
	b, _ := json.Marshal(f) //nolint:errchkjson // plain data: cannot fail
	sum := sha256.Sum256(b)
	return []byte(userDataPrefix + hex.EncodeToString(sum[:8]))
}

// chainSpecs are the base chains of table t, by name.
func chainSpecs(t *nftables.Table) map[string]*nftables.Chain {
	accept := nftables.ChainPolicyAccept
	return map[string]*nftables.Chain{
		ChainSNAT: {Name: ChainSNAT, Table: t, Type: nftables.ChainTypeNAT, Hooknum: nftables.ChainHookPostrouting,
			Priority: nftables.ChainPriorityRef(*nftables.ChainPriorityNATSource - 1), Policy: &accept},
		ChainCtMark: {Name: ChainCtMark, Table: t, Type: nftables.ChainTypeFilter, Hooknum: nftables.ChainHookForward,
			Priority: nftables.ChainPriorityFilter, Policy: &accept},
		ChainMarkRestore: {Name: ChainMarkRestore, Table: t, Type: nftables.ChainTypeFilter, Hooknum: nftables.ChainHookPrerouting,
			Priority: nftables.ChainPriorityFilter, Policy: &accept},
	}
}

// chainRules are the expressions of f's rules, per chain, in a fixed chain order.
func (f Firewall) chainRules() ([]string, map[string][][]expr.Any) {
	rules := map[string][][]expr.Any{}
	for _, s := range f.SNAT {
		rules[ChainSNAT] = append(rules[ChainSNAT], s.exprs())
	}
	for _, c := range f.CtMarks {
		rules[ChainCtMark] = append(rules[ChainCtMark], join(matchIP(srcOff, c.Src, expr.CmpOpEq), matchIif(c.Iif), setCtMark(c.Mark)))
	}
	for _, m := range f.MarkRestores {
		rules[ChainMarkRestore] = append(rules[ChainMarkRestore], join(matchIP(dstOff, m.Dst, expr.CmpOpEq), matchIif(m.Iif), restoreMark()))
	}
	var order []string
	for _, name := range []string{ChainSNAT, ChainCtMark, ChainMarkRestore} {
		if len(rules[name]) > 0 {
			order = append(order, name)
		}
	}
	return order, rules
}

// exprs are the expressions of s.
func (s SNAT) exprs() []expr.Any {
	var e []expr.Any
	if s.Dst.IsValid() {
		e = matchIP(dstOff, s.Dst, expr.CmpOpEq)
	}
	if s.Src.IsValid() {
		e = join(e, matchIP(srcOff, s.Src, expr.CmpOpEq))
	}
	for _, n := range s.NotSrc {
		e = join(e, matchIP(srcOff, n, expr.CmpOpNeq))
	}
	to := s.To.Masked()
	if to.Bits() == 32 {
		return join(e, []expr.Any{
			&expr.Immediate{Register: 1, Data: to.Addr().AsSlice()},
			&expr.NAT{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegAddrMax: 1},
		})
	}
	return join(e, []expr.Any{
		&expr.Immediate{Register: 1, Data: to.Addr().AsSlice()},
		&expr.Immediate{Register: 2, Data: lastAddr(to).AsSlice()},
		&expr.NAT{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegAddrMax: 2, Prefix: true},
	})
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	for i := range a {
		hostBits := max(0, min(8, 8*(i+1)-p.Bits())) // bits of byte i outside the prefix
		a[i] |= byte(1<<hostBits - 1)
	}
	return netip.AddrFrom4(a)
}

// Offsets of the IPv4 source address in the network header (the destination follows it).
const (
	srcOff = 12
	dstOff = 16
)

// matchIP compares the address at offset off (srcOff or dstOff), masked to p's length, with p's
// network using op.
func matchIP(off uint32, p netip.Prefix, op expr.CmpOp) []expr.Any {
	p = p.Masked()
	m := make([]byte, 4)
	for i := range m {
		covered := max(0, min(8, p.Bits()-8*i)) // bits of byte i in the prefix
		m[i] = ^(byte(0xff) >> covered)
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: m, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: op, Register: 1, Data: p.Addr().AsSlice()},
	}
}

// matchIif matches the input interface's name.
func matchIif(name string) []expr.Any {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b}}
}

// setCtMark sets the connection mark.
func setCtMark(mark uint32) []expr.Any {
	return []expr.Any{&expr.Immediate{Register: 1, Data: binaryutil.NativeEndian.PutUint32(mark)}, &expr.Ct{Key: expr.CtKeyMARK, Register: 1, SourceRegister: true}}
}

// restoreMark copies the connection mark to the packet mark.
func restoreMark() []expr.Any {
	return []expr.Any{&expr.Ct{Key: expr.CtKeyMARK, Register: 1}, &expr.Meta{Key: expr.MetaKeyMARK, Register: 1, SourceRegister: true}}
}

// join concatenates expression lists.
func join(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// fabricTables lists the fabric's nftables tables (family ip) and the user data of each one's
// first rule.
func fabricTables(conn *nftables.Conn) (map[string][]byte, error) {
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, fmt.Errorf("listing nftables tables: %w", err)
	}
	chains, err := conn.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, fmt.Errorf("listing nftables chains: %w", err)
	}
	out := map[string][]byte{}
	for _, t := range tables {
		for _, c := range chains {
			if c.Table.Name != t.Name || chainSpecs(t)[c.Name] == nil {
				continue
			}
			rules, err := conn.GetRules(t, c)
			if err != nil {
				return nil, fmt.Errorf("reading chain %s of nftables table %s: %w", c.Name, t.Name, err)
			}
			if len(rules) > 0 && bytes.HasPrefix(rules[0].UserData, []byte(userDataPrefix)) {
				out[t.Name] = rules[0].UserData
			}
			break
		}
	}
	return out, nil
}

// syncFirewalls makes the fabric's nftables tables exactly firewalls: it rewrites, each in one
// transaction, the tables whose content differs and deletes the fabric's other tables.
func syncFirewalls(firewalls []Firewall) (written, removed int, err error) {
	conn, err := nftables.New()
	if err != nil {
		return 0, 0, fmt.Errorf("opening nftables: %w", err)
	}
	have, err := fabricTables(conn)
	if err != nil {
		return 0, 0, err
	}
	for _, f := range firewalls {
		digest := f.digest()
		if bytes.Equal(have[f.Name], digest) {
			delete(have, f.Name)
			continue
		}
		delete(have, f.Name)
		if err := writeFirewall(conn, f, digest); err != nil {
			return written, removed, err
		}
		written++
	}
	for name := range have {
		t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: name}
		conn.DelTable(t)
		if err := conn.Flush(); err != nil {
			return written, removed, fmt.Errorf("deleting nftables table %s: %w", name, err)
		}
		removed++
	}
	return written, removed, nil
}

// writeFirewall replaces table f.Name, in one transaction, with f's chains and rules, each rule
// carrying digest as user data.
func writeFirewall(conn *nftables.Conn, f Firewall, digest []byte) error {
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: f.Name}
	conn.AddTable(t) // makes the deletion valid when the table does not exist yet
	conn.DelTable(t)
	conn.AddTable(t)
	specs := chainSpecs(t)
	order, rules := f.chainRules()
	for _, name := range order {
		c := conn.AddChain(specs[name])
		for _, e := range rules[name] {
			conn.AddRule(&nftables.Rule{Table: t, Chain: c, Exprs: e, UserData: digest})
		}
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("writing nftables table %s: %w", f.Name, err)
	}
	return nil
}
