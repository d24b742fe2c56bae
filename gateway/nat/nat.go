// Package nat writes a gateway's iptables rules through go-iptables: NETMAP rules for the remote
// networks the local cluster remaps, and a TCP MSS clamp on the tunnel.
//
// A remap says the local cluster sees a remote network Real (e.g. 10.1.0.0/16, overlapping its
// own pods) as Mapped (e.g. 10.71.0.0/16). The gateway translates on its own, from the local
// Configuration alone:
//
//   - local to remote: connections to Mapped are marked, their destination is mapped back to Real
//     (nat PREROUTING), and the mark routes them into the tunnel through a policy-routing table
//     (the main table would send Real to the local pods when the networks overlap);
//   - remote to local: connections coming out of the tunnel are marked, and their source in Real
//     is mapped to Mapped on the way to the local pods (nat POSTROUTING);
//   - replies follow conntrack, and the restored mark sends replies of remote connections back into
//     the tunnel.
//
// Every rule lives in chains of the gateway's own, named after its interface and hooked into the
// built-in chains, so that Sync and Remove never touch anybody else's rules.
package nat

import (
	"fmt"
	"net"
	"strconv"

	"github.com/coreos/go-iptables/iptables"
)

// Remap is one remote network and how the local cluster sees it.
type Remap struct {
	// Real is the network as the remote cluster uses it.
	Real net.IPNet
	// Mapped is the network the local cluster uses for it.
	Mapped net.IPNet
}

// Rules are the rules of one gateway.
type Rules struct {
	// Interface is the tunnel interface.
	Interface string
	// Mark is the fwmark (and conntrack mark) of remapped connections; EnsureRule in netcfg sends
	// it to the tunnel's routing table.
	Mark int
	// MTU is the tunnel MTU; the clamp keeps TCP segments within it.
	MTU int
	// Remaps are the remapped remote networks.
	Remaps []Remap
}

type chain struct{ table, builtin, name string }

func (r Rules) chains() []chain {
	return []chain{
		{"mangle", "PREROUTING", "LIQO-" + r.Interface + "-MPRE"},
		{"mangle", "FORWARD", "LIQO-" + r.Interface + "-MFWD"},
		{"nat", "PREROUTING", "LIQO-" + r.Interface + "-NPRE"},
		{"nat", "POSTROUTING", "LIQO-" + r.Interface + "-NPOS"},
	}
}

func (r Rules) rules() map[string][][]string {
	ch := r.chains()
	mark := strconv.Itoa(r.Mark)
	out := map[string][][]string{}
	mss := strconv.Itoa(r.MTU - 40)
	minMSS := strconv.Itoa(r.MTU - 39)
	out[ch[1].name] = [][]string{
		{"-o", r.Interface, "-p", "tcp", "--tcp-flags", "SYN,RST", "SYN", "-m", "tcpmss", "--mss", minMSS + ":65535", "-j", "TCPMSS", "--set-mss", mss},
		{"-i", r.Interface, "-p", "tcp", "--tcp-flags", "SYN,RST", "SYN", "-m", "tcpmss", "--mss", minMSS + ":65535", "-j", "TCPMSS", "--set-mss", mss},
	}
	if len(r.Remaps) == 0 {
		return out
	}
	out[ch[0].name] = append(out[ch[0].name],
		[]string{"-i", r.Interface, "-m", "conntrack", "--ctstate", "NEW", "-j", "CONNMARK", "--set-mark", mark})
	for _, m := range r.Remaps {
		out[ch[0].name] = append(out[ch[0].name],
			[]string{"!", "-i", r.Interface, "-d", m.Mapped.String(), "-m", "conntrack", "--ctstate", "NEW", "-j", "CONNMARK", "--set-mark", mark})
		out[ch[2].name] = append(out[ch[2].name],
			[]string{"!", "-i", r.Interface, "-d", m.Mapped.String(), "-j", "NETMAP", "--to", m.Real.String()})
		out[ch[3].name] = append(out[ch[3].name],
			[]string{"!", "-o", r.Interface, "-m", "connmark", "--mark", mark, "-s", m.Real.String(), "-j", "NETMAP", "--to", m.Mapped.String()})
	}
	out[ch[0].name] = append(out[ch[0].name],
		[]string{"!", "-i", r.Interface, "-m", "connmark", "--mark", mark, "-j", "MARK", "--set-mark", mark})
	return out
}

// Sync writes the rules: it creates the gateway's chains and their jumps when missing and
// replaces the chains' contents.
func (r Rules) Sync() error {
	ipt, err := iptables.New()
	if err != nil {
		return fmt.Errorf("opening iptables: %w", err)
	}
	rules := r.rules()
	for _, c := range r.chains() {
		exists, err := ipt.ChainExists(c.table, c.name)
		if err != nil {
			return fmt.Errorf("checking chain %s/%s: %w", c.table, c.name, err)
		}
		if exists {
			err = ipt.ClearChain(c.table, c.name)
		} else {
			err = ipt.NewChain(c.table, c.name)
		}
		if err != nil {
			return fmt.Errorf("preparing chain %s/%s: %w", c.table, c.name, err)
		}
		for _, rule := range rules[c.name] {
			if err := ipt.Append(c.table, c.name, rule...); err != nil {
				return fmt.Errorf("adding rule %v to %s/%s: %w", rule, c.table, c.name, err)
			}
		}
		jumped, err := ipt.Exists(c.table, c.builtin, "-j", c.name)
		if err != nil {
			return fmt.Errorf("checking jump to %s from %s/%s: %w", c.name, c.table, c.builtin, err)
		}
		if !jumped {
			if err := ipt.Insert(c.table, c.builtin, 1, "-j", c.name); err != nil {
				return fmt.Errorf("adding jump to %s from %s/%s: %w", c.name, c.table, c.builtin, err)
			}
		}
	}
	return nil
}

// Remove deletes the gateway's chains and their jumps. Missing ones are not an error.
func (r Rules) Remove() error {
	ipt, err := iptables.New()
	if err != nil {
		return fmt.Errorf("opening iptables: %w", err)
	}
	for _, c := range r.chains() {
		exists, err := ipt.ChainExists(c.table, c.name)
		if err != nil {
			return fmt.Errorf("checking chain %s/%s: %w", c.table, c.name, err)
		}
		if !exists {
			continue // with the nft backend, a jump to a missing chain cannot even be looked for
		}
		if err := ipt.DeleteIfExists(c.table, c.builtin, "-j", c.name); err != nil {
			return fmt.Errorf("removing jump to %s from %s/%s: %w", c.name, c.table, c.builtin, err)
		}
		if err := ipt.ClearAndDeleteChain(c.table, c.name); err != nil {
			return fmt.Errorf("removing chain %s/%s: %w", c.table, c.name, err)
		}
	}
	return nil
}

// Chains lists the table/chain names the rules use, for tests and diagnostics.
func (r Rules) Chains() []string {
	var out []string
	for _, c := range r.chains() {
		out = append(out, c.table+"/"+c.name)
	}
	return out
}
