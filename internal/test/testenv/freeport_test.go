package testenv

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortNeverTwice: the ports FreePort hands out are distinct (a sandbox takes a health,
// a webhook and a pprof port for each controller manager in a row), free to bind, and below the
// kernel's ephemeral range.
func TestFreePortNeverTwice(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 500 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[port] {
			t.Fatalf("FreePort handed out port %d twice", port)
		}
		seen[port] = true
		if low-lowestProbedPort >= 1000 && (port < lowestProbedPort || port >= low) {
			t.Fatalf("FreePort handed out %d, outside [%d, %d)", port, lowestProbedPort, low)
		}
	}
	for port := range seen {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d from FreePort cannot be bound: %v", port, err)
		}
		_ = l.Close()
		if reservePort(port) {
			t.Fatalf("reservePort took port %d, which FreePort reserved a moment ago", port)
		}
	}
}
