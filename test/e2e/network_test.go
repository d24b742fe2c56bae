package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/peerkit/terraform-provider-liqo/internal/sandbox"
)

// expectPodTraffic pings, from each named cluster's stand-in pod (a network namespace the
// sandbox runs behind the cluster's gateway host), the stand-in pod of each other named
// cluster: the pod CIDRs are routed only through the tunnels.
func (r *sandboxRun) expectPodTraffic(t *testing.T, what string, pairs ...[2]string) {
	t.Helper()
	for _, p := range pairs {
		rtt, err := pingFrom(sandbox.PodNetns(p[0]), sandbox.PodAddress(p[1]), 3)
		if err != nil {
			t.Errorf("%s: no pod-to-pod traffic from %s's pod to %s's pod (%s) through the tunnel: %v",
				what, p[0], p[1], sandbox.PodAddress(p[1]), err)
			continue
		}
		t.Logf("%s: ping %s pod -> %s pod (%s) through the tunnel, average RTT %s", what, p[0], p[1], sandbox.PodAddress(p[1]), rtt)
	}
}

// expectNoPodTraffic checks that a stand-in pod cannot reach another cluster's once no tunnel
// joins them.
func (r *sandboxRun) expectNoPodTraffic(t *testing.T, what string, from, to string) {
	t.Helper()
	if _, err := pingFrom(sandbox.PodNetns(from), sandbox.PodAddress(to), 1); err == nil {
		t.Errorf("%s: %s's pod still reaches %s's pod (%s)", what, from, to, sandbox.PodAddress(to))
	}
}

// gatewayInterfaces lists the tunnel (TUN) interfaces in the sandbox's network namespaces and
// in the root one: each gateway makes one and removes it when it stops.
func gatewayInterfaces() ([]string, error) {
	namespaces := []string{""} // the root network namespace
	entries, err := os.ReadDir("/var/run/netns")
	if err != nil {
		return nil, fmt.Errorf("listing the network namespaces: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), sandbox.NetPrefix) {
			namespaces = append(namespaces, e.Name())
		}
	}
	if len(namespaces) == 1 {
		return nil, fmt.Errorf("no network namespace %s* in /var/run/netns: is the sandbox's network up?", sandbox.NetPrefix)
	}
	var found []string
	for _, ns := range namespaces {
		args := []string{"-o", "link", "show", "type", "tun"}
		where := "the root network namespace"
		if ns != "" {
			args = append([]string{"-n", ns}, args...)
			where = ns
		}
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			// "7: lqsbs1a2b3c4d: <POINTOPOINT,...> mtu 1340 ..."
			if f := strings.Fields(line); len(f) > 1 {
				found = append(found, strings.TrimSuffix(f[1], ":")+" in "+where)
			}
		}
	}
	return found, nil
}

// pingFrom sends count ICMP echoes to dst from network namespace ns, one every 100 ms, and
// returns the average round trip; it fails unless each is answered within a second. The
// socket is opened in ns by a thread that enters it and comes back (the machine may have no
// ping binary).
func pingFrom(ns, dst string, count int) (time.Duration, error) {
	ip := net.ParseIP(dst)
	if ip == nil {
		return 0, fmt.Errorf("bad address %q", dst)
	}
	conn, err := listenICMPIn(ns)
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close() }()
	id := os.Getpid() & 0xffff
	buf := make([]byte, 1500)
	var total time.Duration
	for seq := 1; seq <= count; seq++ {
		msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("liqo-e2e")}}
		b, err := msg.Marshal(nil)
		if err != nil {
			return 0, fmt.Errorf("marshalling echo: %w", err)
		}
		sent := time.Now()
		if _, err := conn.WriteTo(b, &net.IPAddr{IP: ip}); err != nil {
			return 0, fmt.Errorf("sending echo %d: %w", seq, err)
		}
		if err := conn.SetReadDeadline(sent.Add(time.Second)); err != nil {
			return 0, fmt.Errorf("setting deadline: %w", err)
		}
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return 0, fmt.Errorf("echo %d to %s: no answer: %w", seq, dst, err)
			}
			m, err := icmp.ParseMessage(1, buf[:n])
			if err != nil || m.Type != ipv4.ICMPTypeEchoReply {
				continue
			}
			if e, ok := m.Body.(*icmp.Echo); ok && e.ID == id && e.Seq == seq && from.(*net.IPAddr).IP.Equal(ip) {
				total += time.Since(sent)
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return total / time.Duration(count), nil
}

// listenICMPIn opens an ICMP socket in network namespace ns.
func listenICMPIn(ns string) (*icmp.PacketConn, error) {
	type result struct {
		conn *icmp.PacketConn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked if the thread cannot come back: it then dies with the goroutine
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer func() { _ = self.Close() }()
		target, err := os.Open(filepath.Join("/var/run/netns", ns))
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer func() { _ = target.Close() }()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("entering %s: %w", ns, err)}
			return
		}
		conn, err := icmp.ListenPacket("ip4:icmp", "0.0.0.0")
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{conn, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, fmt.Errorf("opening an ICMP socket in %s: %w", ns, r.err)
	}
	return r.conn, nil
}
