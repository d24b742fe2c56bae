// Package nsping pings from a named network namespace without a ping binary (machines and CI
// images may have none): the ICMP socket is opened in the namespace (internal/netns), so the
// rest of the process stays where it is. Tests of the tunnels and the sandbox's demo use it.
package nsping

import (
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/peerkit/terraform-provider-liqo/internal/netns"
)

// Ping sends count ICMP echoes to dst from the named network namespace (one of
// /var/run/netns), one every 100 ms, and returns the average round trip; it fails unless each
// is answered within a second.
func Ping(ns, dst string, count int) (time.Duration, error) {
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
		msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("liqo-nsping")}}
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
	var conn *icmp.PacketConn
	err := netns.Do(netns.Named(ns), func() (err error) {
		if conn, err = icmp.ListenPacket("ip4:icmp", "0.0.0.0"); err != nil {
			return fmt.Errorf("listening for ICMP: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("opening an ICMP socket in %s: %w", ns, err)
	}
	return conn, nil
}
