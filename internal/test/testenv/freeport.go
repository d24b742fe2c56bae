package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lowestProbedPort is the lowest port FreePort hands out: above the fixed ports test-bed
// components listen on (etcd's 2379, the kubelet's 10250, ...).
const lowestProbedPort = 15000

// FreePort returns a TCP port of 127.0.0.1 that nothing listens on now, for a process under test
// to bind. It is taken below the kernel's ephemeral range (net.ipv4.ip_local_port_range), where
// the outgoing connections of every process on the machine take their local ports: a port from
// that range (as a listener on port 0 gets) may become the local port of some connection before
// the process binds it, and the process then fails with "address already in use". A port handed
// out is reserved for portReservation, across the processes of the machine (reservePort), so
// that two FreePort calls (of one sandbox's ports, or of parallel tests) never hand out the same
// port before its process binds it.
func FreePort() (int, error) {
	low := ephemeralLow()
	if low-lowestProbedPort < 1000 {
		return ephemeralPort()
	}
	for range 1000 {
		port := lowestProbedPort + rand.IntN(low-lowestProbedPort) //nolint:gosec // not a secret: a port to try
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		if !reservePort(port) {
			continue
		}
		return port, nil
	}
	return ephemeralPort()
}

// portReservation is how long a port FreePort handed out stays reserved: long enough for the
// process it is for to start and bind it.
const portReservation = 10 * time.Minute

// handedOut holds the ports this process handed out, when (the reservation of last resort when
// the machine-wide one cannot be written).
var handedOut = struct {
	sync.Mutex
	at map[int]time.Time
}{at: map[int]time.Time{}}

// reservePort reserves port for portReservation, in this process and in a folder of the
// machine's temporary directory that every test process shares (a file per port, created
// exclusively; a reservation older than portReservation is taken over). The folder is under /tmp,
// not TMPDIR, which tests set per process. It reports false when the port is reserved already.
func reservePort(port int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	now := time.Now()
	if at, ok := handedOut.at[port]; ok && now.Sub(at) < portReservation {
		return false
	}
	handedOut.at[port] = now
	dir := fmt.Sprintf("/tmp/liqo-test-ports-%d", os.Getuid())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return true
	}
	path := filepath.Join(dir, strconv.Itoa(port))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err == nil {
		_ = f.Close()
		return true
	}
	info, statErr := os.Stat(path)
	if statErr != nil || now.Sub(info.ModTime()) < portReservation {
		return false
	}
	return os.Chtimes(path, now, now) == nil
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

// ephemeralLow reads the lowest port of the kernel's range of local ports for outgoing
// connections; Linux's default (32768) when it cannot be read.
func ephemeralLow() int {
	const linuxDefault = 32768
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return linuxDefault
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return linuxDefault
	}
	return low
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
