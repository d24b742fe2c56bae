// Package remap reads how a cluster sees a peer's networks: a peer's network that overlaps one
// of the local cluster's is remapped, so the local cluster reaches the peer's addresses in Real
// under the same host part in Mapped (the Configuration controller picks Mapped, the gateways
// translate between the two). The gateway turns the pairs into NAT rules; the virtual kubelet
// translates the offloaded pods' addresses with them, so that the consumer's view of a pod (its
// status, the endpoints of the Services that select it) is an address it reaches.
package remap

import (
	"fmt"
	"net"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// Remap is one remote network and how the local cluster sees it (Real == Mapped when it is not
// remapped).
type Remap struct {
	// Real is the network as the remote cluster uses it.
	Real net.IPNet
	// Mapped is the network the local cluster uses for it.
	Mapped net.IPNet
}

// Remapped tells whether the local cluster sees the network under other addresses.
func (r Remap) Remapped() bool { return !r.Real.IP.Equal(r.Mapped.IP) }

// FromConfiguration pairs the remote cluster's networks in a Configuration (spec.remote: pod,
// then external CIDRs) with how the local cluster sees them (status.remote, where the
// Configuration controller wrote the remapped ones). Empty when the spec declares none.
func FromConfiguration(c *netv1beta1.Configuration) ([]Remap, error) {
	var out []Remap
	var st netv1beta1.ClusterConfigCIDR
	if c.Status.Remote != nil {
		st = c.Status.Remote.CIDR
	}
	pairs := func(spec, status []netv1beta1.CIDR) error {
		for i, s := range spec {
			_, real, err := net.ParseCIDR(string(s))
			if err != nil {
				return fmt.Errorf("configuration %s/%s: remote CIDR %q: %w", c.Namespace, c.Name, s, err)
			}
			mapped := real
			if i < len(status) && status[i] != "" {
				if _, mapped, err = net.ParseCIDR(string(status[i])); err != nil {
					return fmt.Errorf("configuration %s/%s: remapped CIDR %q: %w", c.Namespace, c.Name, status[i], err)
				}
				if rs, _ := real.Mask.Size(); !sameSize(rs, mapped) {
					return fmt.Errorf("configuration %s/%s: remapped CIDR %s is not the size of %s", c.Namespace, c.Name, mapped, real)
				}
			}
			out = append(out, Remap{Real: *real, Mapped: *mapped})
		}
		return nil
	}
	if err := pairs(c.Spec.Remote.CIDR.Pod, st.Pod); err != nil {
		return nil, err
	}
	if err := pairs(c.Spec.Remote.CIDR.External, st.External); err != nil {
		return nil, err
	}
	return out, nil
}

// Local returns the address the local cluster reaches the remote address ip at: ip with the
// host part kept and the network replaced by the Mapped of the first Remap whose Real holds it;
// ip itself when none does (or when it is not an IPv4 address).
func Local(ip string, remaps []Remap) string {
	addr := net.ParseIP(ip).To4()
	if addr == nil {
		return ip
	}
	for _, r := range remaps {
		if !r.Remapped() || !r.Real.Contains(addr) {
			continue
		}
		base, mask := r.Mapped.IP.To4(), r.Mapped.Mask
		if base == nil || len(mask) != net.IPv4len {
			continue
		}
		out := make(net.IP, net.IPv4len)
		for i := range out {
			out[i] = base[i]&mask[i] | addr[i]&^mask[i]
		}
		return out.String()
	}
	return ip
}

func sameSize(bits int, n *net.IPNet) bool {
	b, _ := n.Mask.Size()
	return b == bits
}
