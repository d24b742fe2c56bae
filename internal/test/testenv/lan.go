package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/netns"
)

// LAN is an Ethernet link for multicast tests (LAN discovery): a bridge, and network namespaces
// (members) each with a veth on it, all in one IPv4 /24.
type LAN struct {
	// Bridge is the bridge's name.
	Bridge string
	// Hub is the path of the bridge's namespace; "" when it is this process's own.
	Hub string
	// Addr is the bridge's IPv4 address.
	Addr string
	// Members are the namespaces on the link.
	Members []LANMember
}

// LANMember is a namespace on a LAN.
type LANMember struct {
	// NS is the namespace's path (for netns.Do).
	NS string
	// Iface is its veth's name, in NS.
	Iface string
	// Addr is its veth's IPv4 address.
	Addr string
}

// NewLAN makes a LAN of n members, removed when tb ends. The bridge is in a namespace of its
// own (Hub), or with inHost in this process's namespace, so that this process sends and
// receives on it directly (e.g. a provider under test, or a manager run in-process). It skips
// tb unless it runs as root with ip (iproute2) on PATH. Tests using it take /work/wt/net.lock
// or run alone: the /24 is random among 256, not checked.
func NewLAN(tb testing.TB, n int, inHost bool) *LAN {
	tb.Helper()
	requireNetns(tb)
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		tb.Fatalf("naming a LAN: %v", err)
	}
	tag := hex.EncodeToString(b)
	subnet := fmt.Sprintf("10.231.%d.", b[0])
	l := &LAN{Bridge: "lqbr" + tag, Addr: subnet + "1"}
	ip := func(args ...string) {
		tb.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// hub runs ip in the bridge's namespace.
	hub := func(args ...string) { tb.Helper(); ip(args...) }
	if !inHost {
		name := NewNetns(tb, "lqlanhub")
		l.Hub = netns.Named(name)
		hub = func(args ...string) { tb.Helper(); ip(append([]string{"-n", name}, args...)...) }
	}
	hub("link", "add", l.Bridge, "type", "bridge")
	if inHost {
		tb.Cleanup(func() { _ = exec.Command("ip", "link", "del", l.Bridge).Run() })
	}
	hub("addr", "add", l.Addr+"/24", "dev", l.Bridge)
	hub("link", "set", l.Bridge, "up")
	for i := range n {
		name := NewNetns(tb, "lqlan")
		m := LANMember{NS: netns.Named(name), Iface: "lan0", Addr: fmt.Sprintf("%s%d", subnet, i+2)}
		peer := fmt.Sprintf("lqv%s%d", tag, i)
		ip("-n", name, "link", "add", m.Iface, "type", "veth", "peer", "name", peer)
		// The peer is made in the member's namespace, then moved to the bridge's.
		if inHost {
			ip("-n", name, "link", "set", peer, "netns", strconv.Itoa(os.Getpid()))
		} else {
			ip("-n", name, "link", "set", peer, "netns", strings.TrimPrefix(l.Hub, netns.Dir+"/"))
		}
		ip("-n", name, "addr", "add", m.Addr+"/24", "dev", m.Iface)
		ip("-n", name, "link", "set", m.Iface, "up")
		hub("link", "set", peer, "master", l.Bridge)
		hub("link", "set", peer, "up")
		l.Members = append(l.Members, m)
	}
	return l
}
