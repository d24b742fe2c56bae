package fabric

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netlink"

	"github.com/peerkit/terraform-provider-liqo/gateway/netcfg"
)

// Encap is the encapsulation of the tunnel links.
type Encap string

const (
	// EncapGeneve is upstream's: Geneve links.
	EncapGeneve Encap = "geneve"
	// EncapVXLAN is the fallback on kernels without Geneve: VXLAN links with the same network
	// identifiers, addresses and UDP port.
	EncapVXLAN Encap = "vxlan"
)

// DefaultPort is the UDP port of the tunnels (upstream's Geneve port).
const DefaultPort = 6091

// encapOverhead is what Geneve and VXLAN add to a packet over IPv4 (outer IP, UDP, their header
// and the inner Ethernet header), taken off the path's MTU.
const encapOverhead = 50

// LinkAlias marks the links the fabric made, so that it finds and removes them (and only them)
// whatever their names.
const LinkAlias = "liqo-fabric"

// InterfacePrefix starts upstream's tunnel link names ("liqo." and 10 random characters).
const InterfacePrefix = "liqo."

// DetectEncap says which encapsulation the kernel of the current network namespace takes:
// Geneve when it can create a Geneve link (upstream's), VXLAN when it cannot but can create a
// VXLAN one. It creates and deletes a probe link of each kind and logs the choice.
func DetectEncap(log logr.Logger) (Encap, error) {
	geneveErr := probeLink(EncapGeneve)
	if geneveErr == nil {
		log.Info("tunnel encapsulation", "encap", EncapGeneve)
		return EncapGeneve, nil
	}
	if err := probeLink(EncapVXLAN); err != nil {
		return "", fmt.Errorf("the kernel takes neither Geneve (%w) nor VXLAN links (%w)", geneveErr, err)
	}
	log.Info("this kernel has no Geneve: falling back to VXLAN on the same IDs, addresses and port",
		"encap", EncapVXLAN, "geneveError", geneveErr.Error())
	return EncapVXLAN, nil
}

// probeLink creates a link of encapsulation e with a random name and deletes it.
func probeLink(e Encap) error {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("naming a probe link: %w", err)
	}
	probe := Tunnel{Name: "lqprobe" + hex.EncodeToString(b), ID: maxVNI, Remote: netip.AddrFrom4([4]byte{192, 0, 2, 1}), MTU: 1400}
	l := LinkSpec(e, probe, DefaultPort)
	if err := netlink.LinkAdd(l); err != nil {
		return fmt.Errorf("creating a %s link: %w", e, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("deleting probe link %s: %w", probe.Name, err)
	}
	return nil
}

// LinkSpec is the netlink link of tunnel t with encapsulation e on UDP port port: a Geneve or
// VXLAN link with network identifier t.ID towards t.Remote, with alias LinkAlias (which the
// kernel takes only once the link exists: netlink.LinkSetAlias).
func LinkSpec(e Encap, t Tunnel, port uint16) netlink.Link {
	attrs := netlink.LinkAttrs{Name: t.Name, MTU: t.MTU, TxQLen: 1000, Alias: LinkAlias, HardwareAddr: MAC(t.Address)}
	remote := net.IP(t.Remote.AsSlice())
	if e == EncapVXLAN {
		return &netlink.Vxlan{LinkAttrs: attrs, VxlanId: int(t.ID), Group: remote, Port: int(port)}
	}
	return &netlink.Geneve{LinkAttrs: attrs, ID: t.ID, Remote: remote, Dport: port}
}

// MAC is the Ethernet address of a tunnel link whose internal address is a: 02:00 (a locally
// administered unicast prefix) and a's four bytes. It does not change when the link is made
// again (a gateway restarted or rescheduled), so the other end's neighbour entry for a stays
// right and traffic resumes at once instead of after the entry goes stale.
// For anything but an IPv4 address it is nil (the kernel picks one).
func MAC(a netip.Addr) net.HardwareAddr {
	if !a.Is4() {
		return nil
	}
	b := a.As4()
	return net.HardwareAddr{0x02, 0x00, b[0], b[1], b[2], b[3]}
}

// sameLink says whether existing is tunnel t's link with encapsulation e on port port.
func sameLink(existing netlink.Link, e Encap, t Tunnel, port uint16) bool {
	if existing.Attrs().MTU != t.MTU || existing.Attrs().Alias != LinkAlias || !bytes.Equal(existing.Attrs().HardwareAddr, MAC(t.Address)) {
		return false
	}
	remote := net.IP(t.Remote.AsSlice())
	switch l := existing.(type) {
	case *netlink.Geneve:
		return e == EncapGeneve && l.ID == t.ID && l.Remote.Equal(remote) && l.Dport == port
	case *netlink.Vxlan:
		return e == EncapVXLAN && l.VxlanId == int(t.ID) && l.Group.Equal(remote) && l.Port == int(port)
	}
	return false
}

// ensureTunnel makes tunnel t's link exist as asked, up, with its address; it replaces a link
// of that name that differs. It returns whether it created the link.
func (d *Dataplane) ensureTunnel(t Tunnel) (bool, error) {
	if t.MTU == 0 {
		mtu, err := netcfg.UnderlayMTU(net.IP(t.Remote.AsSlice()), "")
		if err != nil {
			return false, fmt.Errorf("tunnel %s: MTU of the path to %s: %w", t.Name, t.Remote, err)
		}
		t.MTU = mtu - encapOverhead
	}
	created := false
	existing, err := netlink.LinkByName(t.Name)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		existing = nil
	case err != nil:
		return false, fmt.Errorf("tunnel %s: finding its link: %w", t.Name, err)
	}
	if existing != nil && !sameLink(existing, d.Encap, t, d.port()) {
		d.Log.Info("replacing a tunnel link that differs", "link", t.Name, "type", existing.Type(), "id", t.ID, "remote", t.Remote.String())
		if err := netlink.LinkDel(existing); err != nil {
			return false, fmt.Errorf("tunnel %s: deleting its differing link: %w", t.Name, err)
		}
		existing = nil
	}
	if existing == nil {
		l := LinkSpec(d.Encap, t, d.port())
		if err := netlink.LinkAdd(l); err != nil {
			return false, fmt.Errorf("tunnel %s: creating its %s link (id %d, remote %s): %w", t.Name, d.Encap, t.ID, t.Remote, err)
		}
		created = true
		// The kernel ignores the alias of a link being created.
		if err := netlink.LinkSetAlias(l, LinkAlias); err != nil {
			return created, fmt.Errorf("tunnel %s: marking its link: %w", t.Name, err)
		}
	}
	addr := &net.IPNet{IP: net.IP(t.Address.AsSlice()), Mask: net.CIDRMask(32, 32)}
	if err := netcfg.SetUp(t.Name, addr, t.MTU); err != nil {
		return created, fmt.Errorf("tunnel %s: %w", t.Name, err)
	}
	return created, nil
}

// ownLinks lists the links the fabric made (those with its alias).
func ownLinks() ([]netlink.Link, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	var out []netlink.Link
	for _, l := range links {
		if l.Attrs().Alias == LinkAlias {
			out = append(out, l)
		}
	}
	return out, nil
}

// pruneLinks deletes the fabric's links whose names keep does not hold; it returns their names.
func pruneLinks(keep map[string]bool) ([]string, error) {
	links, err := ownLinks()
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, l := range links {
		if keep[l.Attrs().Name] {
			continue
		}
		if err := netlink.LinkDel(l); err != nil {
			return removed, fmt.Errorf("deleting tunnel link %s: %w", l.Attrs().Name, err)
		}
		removed = append(removed, l.Attrs().Name)
	}
	return removed, nil
}
