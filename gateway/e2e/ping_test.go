package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// helperEnv makes the test binary act as a small tool instead of running tests: the machine has
// no ping, so the test binary pings from inside a network namespace.
const helperEnv = "LIQO_E2E_HELPER"

// runHelper runs the tool named by helperEnv, if any, and reports whether it did.
func runHelper() (code int, ran bool) {
	switch os.Getenv(helperEnv) {
	case "":
		return 0, false
	case "ping":
		count, _ := strconv.Atoi(os.Getenv("PING_COUNT"))
		if err := icmpPing(os.Getenv("PING_DST"), count); err != nil {
			fmt.Println(err)
			return 1, true
		}
		return 0, true
	default:
		fmt.Println("unknown helper", os.Getenv(helperEnv))
		return 2, true
	}
}

// icmpPing sends count echo requests to dst, one every 200 ms, and fails unless every one is
// answered by dst within a second.
func icmpPing(dst string, count int) error {
	ip := net.ParseIP(dst)
	if ip == nil {
		return fmt.Errorf("bad address %q", dst)
	}
	c, err := icmp.ListenPacket("ip4:icmp", "0.0.0.0")
	if err != nil {
		return fmt.Errorf("opening ICMP socket: %w", err)
	}
	defer func() { _ = c.Close() }()
	id := os.Getpid() & 0xffff
	buf := make([]byte, 1500)
	for seq := 1; seq <= count; seq++ {
		msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("liqo-e2e")}}
		b, err := msg.Marshal(nil)
		if err != nil {
			return fmt.Errorf("marshalling echo: %w", err)
		}
		start := time.Now()
		if _, err := c.WriteTo(b, &net.IPAddr{IP: ip}); err != nil {
			return fmt.Errorf("sending echo %d: %w", seq, err)
		}
		if err := c.SetReadDeadline(start.Add(time.Second)); err != nil {
			return fmt.Errorf("setting deadline: %w", err)
		}
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return fmt.Errorf("echo %d to %s: no answer: %w", seq, dst, err)
			}
			m, err := icmp.ParseMessage(1, buf[:n])
			if err != nil || m.Type != ipv4.ICMPTypeEchoReply {
				continue
			}
			if e, ok := m.Body.(*icmp.Echo); ok && e.ID == id && e.Seq == seq && from.(*net.IPAddr).IP.Equal(ip) {
				fmt.Printf("reply from %s: seq=%d time=%s\n", from, seq, time.Since(start))
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// ping pings dst from netns ns; it returns the output and whether every packet came back.
func ping(ns, dst string, count int) (string, bool) {
	self, err := os.Executable()
	if err != nil {
		return err.Error(), false
	}
	cmd := exec.Command("ip", "netns", "exec", ns, self)
	cmd.Env = append(os.Environ(), helperEnv+"=ping", "PING_DST="+dst, "PING_COUNT="+strconv.Itoa(count))
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}
