package nodeagent

import (
	"context"
	"fmt"
	"math"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/gateway/fabric"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// localAddrs are the IPv4 addresses of the calling thread's network namespace.
func localAddrs() (map[string]bool, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("listing the node's addresses: %w", err)
	}
	out := map[string]bool{}
	for _, a := range addrs {
		out[a.IP.String()] = true
	}
	return out, nil
}

// sourceTo is the source address the namespace uses towards dst (upstream's source detector);
// "" when it has no route there.
func sourceTo(dst string) string {
	ip := net.ParseIP(dst)
	if ip == nil {
		return ""
	}
	routes, err := netlink.RouteGet(ip)
	if err != nil || len(routes) == 0 || routes[0].Src == nil {
		return ""
	}
	return routes[0].Src.String()
}

// Kernel constants of a link's IPv4 settings (include/uapi/linux/if_link.h and ip.h).
const (
	iflaInetConf    = 1 // IFLA_INET_CONF, in IFLA_AF_SPEC/AF_INET
	devconfRPFilter = 8 // IPV4_DEVCONF_RP_FILTER
	rpFilterLoose   = 2
)

// looseRPFilter sets reverse-path filtering to loose on the gateway side's links: the answers of
// another node's pods come in on its tunnel link while the main table routes their source
// through the CNI, which the strict check refuses (the kernel takes the larger of "all" and the
// link's value, so loose holds whatever "all" is). It goes through netlink (RTM_SETLINK with the
// link's IPv4 settings), which NET_ADMIN allows, rather than /proc/sys, which a container that
// is not privileged sees read-only.
func looseRPFilter(links []string) error {
	for _, name := range links {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return fmt.Errorf("finding link %s for its reverse-path filtering: %w", name, err)
		}
		req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
		idx := l.Attrs().Index
		if idx <= 0 || idx > math.MaxInt32 {
			return fmt.Errorf("link %s has index %d", name, idx)
		}
		msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
		msg.Index = int32(idx)
		req.AddData(msg)
		spec := nl.NewRtAttr(unix.IFLA_AF_SPEC, nil)
		spec.AddRtAttr(unix.AF_INET, nil).AddRtAttr(iflaInetConf, nil).AddRtAttr(devconfRPFilter, nl.Uint32Attr(rpFilterLoose))
		req.AddData(spec)
		if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
			return fmt.Errorf("setting loose reverse-path filtering on %s: %w", name, err)
		}
	}
	return nil
}

// writeStatus writes the node's source addresses into its InternalNode's status.nodeIP: remote
// towards a gateway on another node, local towards one hosted here (upstream's source
// detector), and records the encapsulation as an Event once.
func (r *Reconciler) writeStatus(ctx context.Context, v *view, local map[string]bool) error {
	if v.me == nil {
		return nil
	}
	var want netv1beta1.InternalNodeStatusNodeIP
	err := r.in(func() error {
		for i := range v.fabrics {
			gw := string(v.fabrics[i].Spec.GatewayIP)
			src := sourceTo(gw)
			switch {
			case src == "":
			case local[gw] && want.Local == nil:
				want.Local = ptr.To(netv1beta1.IP(src))
			case !local[gw] && want.Remote == nil:
				want.Remote = ptr.To(netv1beta1.IP(src))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.reportEncap(v.me)
	if want.Local == nil && want.Remote == nil || ptr.Equal(want.Local, v.me.Status.NodeIP.Local) && ptr.Equal(want.Remote, v.me.Status.NodeIP.Remote) {
		return nil
	}
	before := v.me.DeepCopy()
	if want.Local != nil {
		v.me.Status.NodeIP.Local = want.Local
	}
	if want.Remote != nil {
		v.me.Status.NodeIP.Remote = want.Remote
	}
	if err := r.Status().Patch(ctx, v.me, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing status.nodeIP of InternalNode %s: %w", v.me.Name, err)
	}
	r.Log.Info("node source address written", "node", v.me.Name, "local", ptr.Deref(want.Local, ""), "remote", ptr.Deref(want.Remote, ""))
	return nil
}

// reportEncap records, once per process, the tunnels' encapsulation on the node's InternalNode
// (upstream's status has no field for it): Normal for Geneve, Warning for the VXLAN fallback.
func (r *Reconciler) reportEncap(in *netv1beta1.InternalNode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reported || r.Recorder == nil {
		return
	}
	r.reported = true
	kind, note := corev1.EventTypeNormal, "the fabric's tunnels of this node use Geneve"
	if r.Dataplane.Encap != fabric.EncapGeneve {
		kind, note = corev1.EventTypeWarning, fmt.Sprintf("the fabric's tunnels of this node use %s: the kernel has no Geneve "+
			"(or --encap forces it); every node and gateway must use the same encapsulation", r.Dataplane.Encap)
	}
	r.Recorder.Eventf(in, nil, kind, ReasonEncapsulation, "ApplyFabric", "%s", note)
}

// ReasonEncapsulation is the reason of the Event that says the tunnels' encapsulation.
const ReasonEncapsulation = "FabricEncapsulation"
