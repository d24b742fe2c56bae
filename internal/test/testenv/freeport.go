package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// lowestProbedPort is the lowest port FreePort hands out: above the fixed ports test-bed
// components listen on (etcd's 2379, the kubelet's 10250, ...).
const lowestProbedPort = 15000

// FreePort returns a TCP port of 127.0.0.1 that nothing listens on now, for a process under test
// to bind. It is taken below the kernel's ephemeral range (net.ipv4.ip_local_port_range), where
// the outgoing connections of every process on the machine take their local ports: a port from
// that range (as a listener on port 0 gets) may become the local port of some connection before
// the process binds it, and the process then fails with "address already in use". Another
// FreePort in a parallel test may still pick the same port (about 1 in 17,000).
func FreePort() (int, error) {
	low, _ := ephemeralRange()
	if low-lowestProbedPort < 1000 {
		return ephemeralPort()
	}
	for range 100 {
		port := lowestProbedPort + rand.IntN(low-lowestProbedPort) //nolint:gosec // not a secret: a port to try
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		return port, nil
	}
	return ephemeralPort()
}

// freePort is FreePort, for this package's callers.
func freePort() (int, error) { return FreePort() }

// ephemeralPort returns a port the kernel gives a listener on port 0, free a moment ago.
func ephemeralPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralRange reads the kernel's range of local ports for outgoing connections; Linux's
// default when it cannot be read.
func ephemeralRange() (low, high int) {
	low, high = 32768, 60999
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low, high
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return low, high
	}
	l, err1 := strconv.Atoi(fields[0])
	h, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil {
		return low, high
	}
	return l, h
}

// FreeAddr returns 127.0.0.1:<FreePort> for a listener of a process or server under test, and
// fails tb when there is none.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	port, err := FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
