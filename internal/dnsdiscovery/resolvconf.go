package dnsdiscovery

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
)

// ResolvConf is the file the system's nameservers are read from.
const ResolvConf = "/etc/resolv.conf"

// SystemNameservers returns the nameservers of path (a resolv.conf file), as host:port with
// port 53, in the file's order.
func SystemNameservers(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the system's nameservers: %w; set nameserver", err)
	}
	defer func() { _ = f.Close() }()
	servers, err := parseResolvConf(f)
	if err != nil {
		return nil, fmt.Errorf("reading the system's nameservers from %s: %w", path, err)
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("%s names no nameserver; set nameserver", path)
	}
	return servers, nil
}

// parseResolvConf returns the addresses of the nameserver lines of a resolv.conf, as host:port.
// An IPv6 address keeps its zone (fe80::1%eth0); a line whose address does not parse is skipped,
// as the C library does.
func parseResolvConf(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		if _, err := netip.ParseAddr(fields[1]); err != nil {
			continue
		}
		out = append(out, net.JoinHostPort(fields[1], "53"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	return out, nil
}
