// Package probe measures a tunnel's latency with a UDP echo between the two gateways' tunnel
// addresses: each gateway answers on Port, and sends timestamped requests to its peer.
package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Port is the UDP port the echo responder listens on, on the tunnel address.
const Port = 51899

// magic starts every probe packet, so that stray datagrams are ignored.
var magic = [4]byte{'l', 'q', 'p', 'b'}

// Responder answers probes. Close stops it.
type Responder struct {
	conn *net.UDPConn
}

// Listen starts a responder on addr:Port. addr must be configured on an interface already.
func Listen(addr net.IP) (*Responder, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: addr, Port: Port})
	if err != nil {
		return nil, fmt.Errorf("listening for probes on %s: %w", net.JoinHostPort(addr.String(), strconv.Itoa(Port)), err)
	}
	r := &Responder{conn: c}
	go r.serve()
	return r, nil
}

func (r *Responder) serve() {
	buf := make([]byte, 64)
	for {
		n, from, err := r.conn.ReadFromUDP(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if n < 12 || [4]byte(buf[:4]) != magic {
			continue
		}
		_, _ = r.conn.WriteToUDP(buf[:n], from)
	}
}

// Close stops the responder.
func (r *Responder) Close() error {
	if err := r.conn.Close(); err != nil {
		return fmt.Errorf("closing probe responder: %w", err)
	}
	return nil
}

// Once sends one probe to peer:Port and returns the round-trip time. It fails when no answer
// comes back within timeout (or before ctx ends).
func Once(ctx context.Context, peer net.IP, timeout time.Duration) (time.Duration, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp4", net.JoinHostPort(peer.String(), strconv.Itoa(Port)))
	if err != nil {
		return 0, fmt.Errorf("dialing probe to %s: %w", peer, err)
	}
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	if err := c.SetDeadline(deadline); err != nil {
		return 0, fmt.Errorf("setting probe deadline: %w", err)
	}
	msg := make([]byte, 12)
	copy(msg, magic[:])
	start := time.Now()
	binary.BigEndian.PutUint64(msg[4:], uint64(start.UnixNano()))
	if _, err := c.Write(msg); err != nil {
		return 0, fmt.Errorf("sending probe to %s: %w", peer, err)
	}
	buf := make([]byte, 64)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return 0, fmt.Errorf("waiting for probe answer from %s: %w", peer, err)
		}
		if n == 12 && [4]byte(buf[:4]) == magic && binary.BigEndian.Uint64(buf[4:12]) == binary.BigEndian.Uint64(msg[4:]) {
			return time.Since(start), nil
		}
	}
}
