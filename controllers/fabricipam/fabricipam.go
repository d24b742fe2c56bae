// Package fabricipam allocates the network fabric's numbers (issue 32): each node's and each
// gateway's address on the internal network (the InternalNodes' spec.interface.node.ip and the
// InternalFabrics' spec.interface.gateway.ip, from the internal CIDR, 10.80.0.0/16 by default)
// and each GeneveTunnel's 24-bit ID. Like upstream Liqo v1.2's, the allocators keep their state
// in memory and rebuild it from those objects before their first allocation, so that a
// restarted controller manager gives every object the number it had and never hands out one
// that is in use; they allocate next-fit (after the last number given), so a number released
// is not given again before the others have been.
package fabricipam

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// maxTunnelID is the largest Geneve VNI (24 bits).
const maxTunnelID = 1<<24 - 1

// Allocator hands out internal addresses and tunnel IDs. Its zero value is not usable: make
// one with New.
type Allocator struct {
	reader  client.Reader
	network netip.Prefix

	mu      sync.Mutex
	ready   bool
	ips     *pool[netip.Addr]
	tunnels *pool[uint32]
}

// New returns an Allocator of the internal CIDR cidr that rebuilds itself with reader (an
// uncached reader, such as a manager's APIReader, so that it sees every object at once).
func New(reader client.Reader, cidr string) (*Allocator, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() || p.Masked() != p {
		return nil, fmt.Errorf("internal CIDR %q is not an IPv4 network CIDR such as 10.80.0.0/16", cidr)
	}
	if p.Bits() > 30 {
		return nil, fmt.Errorf("internal CIDR %s is too small: it needs an address per node and per gateway (/30 or larger)", cidr)
	}
	return &Allocator{reader: reader, network: p}, nil
}

// CIDR is the internal CIDR.
func (a *Allocator) CIDR() netip.Prefix {
	return a.network
}

// init rebuilds the state from the cluster's InternalNodes, InternalFabrics and GeneveTunnels,
// once; a.mu is held.
func (a *Allocator) init(ctx context.Context) error {
	if a.ready {
		return nil
	}
	first, last := a.network.Addr(), lastAddr(a.network)
	ips := newPool(first.Next(), last.Prev(), func(x netip.Addr) netip.Addr { return x.Next() })
	tunnels := newPool[uint32](0, maxTunnelID-1, func(x uint32) uint32 { return x + 1 })
	var nodes netv1beta1.InternalNodeList
	if err := a.reader.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing InternalNodes to rebuild the fabric IPAM: %w", err)
	}
	var errs []error
	for i := range nodes.Items {
		errs = append(errs, a.restoreIP(ips, NodeKey(nodes.Items[i].Name), string(nodes.Items[i].Spec.Interface.Node.IP)))
	}
	var fabrics netv1beta1.InternalFabricList
	if err := a.reader.List(ctx, &fabrics); err != nil {
		return fmt.Errorf("listing InternalFabrics to rebuild the fabric IPAM: %w", err)
	}
	for i := range fabrics.Items {
		f := &fabrics.Items[i]
		errs = append(errs, a.restoreIP(ips, FabricKey(f.Namespace, f.Name), string(f.Spec.Interface.Gateway.IP)))
	}
	var tuns netv1beta1.GeneveTunnelList
	if err := a.reader.List(ctx, &tuns); err != nil {
		return fmt.Errorf("listing GeneveTunnels to rebuild the tunnel IDs: %w", err)
	}
	for i := range tuns.Items {
		t := &tuns.Items[i]
		errs = append(errs, tunnels.restore(TunnelKey(t.Namespace, t.Name), t.Spec.ID))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("rebuilding the fabric IPAM: %w", err)
	}
	a.ips, a.tunnels, a.ready = ips, tunnels, true
	return nil
}

// restoreIP records that the object key holds ip, when ip is set and in the internal CIDR (an
// object of another CIDR, after the CIDR changed, gets a new address when next reconciled).
func (a *Allocator) restoreIP(ips *pool[netip.Addr], key, ip string) error {
	addr, err := netip.ParseAddr(ip)
	if err != nil || !a.network.Contains(addr) {
		return nil
	}
	return ips.restore(key, addr)
}

// IP returns the internal address of the object key (NodeKey or FabricKey): the one it holds,
// or a free one.
func (a *Allocator) IP(ctx context.Context, key string) (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.init(ctx); err != nil {
		return netip.Addr{}, err
	}
	addr, err := a.ips.allocate(key)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("allocating an address of the internal CIDR %s to %s: %w", a.network, key, err)
	}
	return addr, nil
}

// TunnelID returns the ID of the GeneveTunnel key (TunnelKey): the one it holds, or a free one.
func (a *Allocator) TunnelID(ctx context.Context, key string) (uint32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.init(ctx); err != nil {
		return 0, err
	}
	id, err := a.tunnels.allocate(key)
	if err != nil {
		return 0, fmt.Errorf("allocating a tunnel ID to %s: %w", key, err)
	}
	return id, nil
}

// Release frees the address or tunnel ID of key (when it is known).
func (a *Allocator) Release(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.ready {
		return
	}
	a.ips.release(key)
	a.tunnels.release(key)
}

// NodeKey is the allocation key of the InternalNode name.
func NodeKey(name string) string {
	return "InternalNode " + name
}

// FabricKey is the allocation key of the InternalFabric namespace/name.
func FabricKey(namespace, name string) string {
	return "InternalFabric " + namespace + "/" + name
}

// TunnelKey is the allocation key of the GeneveTunnel namespace/name.
func TunnelKey(namespace, name string) string {
	return "GeneveTunnel " + namespace + "/" + name
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) | (1<<(32-p.Bits()) - 1)
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}
