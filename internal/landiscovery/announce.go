// Package landiscovery is LAN discovery: a cluster announces itself over multicast DNS (RFC 6762)
// as a DNS-SD service (RFC 6763) in the local. domain, and a browser on the same link lists the
// clusters announced there. An announcement is a PTR record _liqo._tcp.local. naming the
// instance <cluster ID>._liqo._tcp.local., its SRV record (the host and port of the cluster's API
// server, or of the proxy in front of it), the host's A/AAAA records, and a TXT record with the
// cluster ID, the Liqo version and what the cluster shares (keys in internal/consts).
//
// The announcer answers queries with github.com/hashicorp/mdns's server, sends the records
// unsolicited when it starts and every refresh interval, and sends them with TTL 0 (a goodbye,
// RFC 6762 section 10.1) before shutting the server down. The browser asks once (and again
// after a second, against a lost packet), listens for the bounded time, and returns the
// clusters in the shape DNS discovery (internal/dnsdiscovery) returns them. IPv4 only.
package landiscovery

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/mdns"
	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/dnsdiscovery"
)

const (
	// Domain is the multicast DNS domain.
	Domain = "local."
	// DefaultRefresh is how often an announcer sends its records unsolicited.
	DefaultRefresh = time.Minute
	// MaxTXTBytes bounds an announcement's TXT record (its strings with their length bytes):
	// RFC 6763 section 6.2's advice, so that a record fits an Ethernet frame.
	MaxTXTBytes = 1300
)

var (
	// groupAddr is where mDNS messages are multicast.
	groupAddr = &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251), Port: 5353}
	// serviceName is the name whose PTR records name the instances.
	serviceName = consts.DiscoveryService + "." + Domain
)

// AnnounceOptions says what an Announcer announces and where.
type AnnounceOptions struct {
	// ClusterID is the cluster's ID; the instance is named after it.
	ClusterID string
	// Host is the API server's (or its proxy's) host: an IP address or a DNS name.
	Host string
	// Port is the API server's port.
	Port uint16
	// IPs are the addresses of the A/AAAA records for Host; none: Host when it is an address,
	// else the addresses of Interface (or of every interface that is up).
	IPs []net.IP
	// Version is the announcing Liqo's version (TXT key version); empty: left out.
	Version string
	// Shares says what the cluster shares (TXT key shares); empty: left out.
	Shares string
	// Interface is the network interface to announce on; empty: the system's default
	// multicast interface.
	Interface string
	// Refresh is how often the records are sent unsolicited; zero: DefaultRefresh.
	Refresh time.Duration
	// Log receives what goes wrong; the zero logger drops it.
	Log logr.Logger
}

// Announcer announces one cluster while Start runs.
type Announcer struct {
	opts    AnnounceOptions
	service *mdns.MDNSService
	server  *mdns.Server
	sender  *net.UDPConn
	closing sync.Once
}

// NewAnnouncer checks opts and opens the sockets (in the calling thread's network namespace):
// from then on it answers queries. Start announces and withdraws; Close withdraws without
// Start.
func NewAnnouncer(opts AnnounceOptions) (*Announcer, error) {
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if err := dnsdiscovery.ValidateClusterID(opts.ClusterID); err != nil {
		return nil, fmt.Errorf("LAN discovery: cluster ID %q: %w", opts.ClusterID, err)
	}
	if opts.Port == 0 || opts.Host == "" {
		return nil, fmt.Errorf("LAN discovery of cluster %s: the API server's host %q and port %d must be set",
			opts.ClusterID, opts.Host, opts.Port)
	}
	iface, err := interfaceByName(opts.Interface)
	if err != nil {
		return nil, fmt.Errorf("LAN discovery of cluster %s: %w", opts.ClusterID, err)
	}
	hostName, ips, err := hostRecords(opts, iface)
	if err != nil {
		return nil, fmt.Errorf("LAN discovery of cluster %s: %w", opts.ClusterID, err)
	}
	txt := []string{consts.DiscoveryTXTClusterID + "=" + opts.ClusterID}
	if opts.Version != "" {
		txt = append(txt, consts.DiscoveryTXTVersion+"="+opts.Version)
	}
	if opts.Shares != "" {
		txt = append(txt, consts.DiscoveryTXTShares+"="+opts.Shares)
	}
	if err := checkTXT(txt); err != nil {
		return nil, fmt.Errorf("LAN discovery of cluster %s: its TXT record: %w", opts.ClusterID, err)
	}
	a := &Announcer{opts: opts}
	a.service, err = mdns.NewMDNSService(opts.ClusterID, consts.DiscoveryService, Domain, hostName, int(opts.Port), ips, txt)
	if err != nil {
		return nil, fmt.Errorf("LAN discovery of cluster %s: %w", opts.ClusterID, err)
	}
	if a.sender, err = multicastSender(iface); err != nil {
		return nil, fmt.Errorf("LAN discovery of cluster %s: %w", opts.ClusterID, err)
	}
	a.server, err = mdns.NewServer(&mdns.Config{Zone: a.service, Iface: iface, Logger: stdLogger(opts.Log)})
	if err != nil {
		_ = a.sender.Close()
		return nil, fmt.Errorf("LAN discovery of cluster %s: starting the mDNS responder on interface %q: %w",
			opts.ClusterID, opts.Interface, err)
	}
	return a, nil
}

// Start announces the cluster (now and every refresh interval) until ctx ends, then withdraws
// it: a goodbye, and the responder shut down. It implements controller-runtime's Runnable.
func (a *Announcer) Start(ctx context.Context) error {
	defer a.Close()
	a.send(defaultTTL)
	// RFC 6762 section 8.3: announce at least twice, a second apart.
	tick := time.NewTimer(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			a.send(defaultTTL)
			tick.Reset(a.opts.Refresh)
		}
	}
}

// Close withdraws the cluster: it shuts the responder down, then sends a goodbye (so that no
// answer follows it). Closing again does nothing; Start closes when its context ends.
func (a *Announcer) Close() {
	a.closing.Do(func() {
		_ = a.server.Shutdown()
		a.send(0)
		_ = a.sender.Close()
		a.opts.Log.V(1).Info("LAN discovery: cluster withdrawn", "clusterID", a.opts.ClusterID)
	})
}

// defaultTTL is the TTL of the records sent unsolicited: hashicorp/mdns's.
const defaultTTL = 120

// send multicasts the announcement's records with the given TTL (0: a goodbye).
func (a *Announcer) send(ttl uint32) {
	rrs := a.service.Records(dns.Question{Name: serviceName, Qtype: dns.TypePTR, Qclass: dns.ClassINET})
	msg := &dns.Msg{MsgHdr: dns.MsgHdr{Response: true, Authoritative: true}, Compress: true}
	for _, rr := range rrs {
		rr = dns.Copy(rr)
		rr.Header().Ttl = ttl
		msg.Answer = append(msg.Answer, rr)
	}
	buf, err := msg.Pack()
	if err == nil {
		_, err = a.sender.WriteToUDP(buf, groupAddr)
	}
	if err != nil {
		a.opts.Log.Error(err, "LAN discovery: sending the announcement", "clusterID", a.opts.ClusterID, "ttl", ttl)
	}
}

// hostRecords is the SRV target and the addresses of its A/AAAA records: Host when it is a
// name; <cluster ID>.local. when it is an address.
func hostRecords(opts AnnounceOptions, iface *net.Interface) (string, []net.IP, error) {
	ips := opts.IPs
	host := strings.TrimSuffix(opts.Host, ".")
	if ip := net.ParseIP(host); ip != nil {
		if len(ips) == 0 {
			ips = []net.IP{ip}
		}
		host = opts.ClusterID + "." + strings.TrimSuffix(Domain, ".")
	} else if _, ok := dns.IsDomainName(host); !ok || host == "" {
		return "", nil, fmt.Errorf("the API server's host %q is neither an IP address nor a DNS name", opts.Host)
	}
	if len(ips) == 0 {
		var err error
		if ips, err = interfaceIPs(iface); err != nil {
			return "", nil, err
		}
	}
	return host + ".", ips, nil
}

// interfaceIPs are the unicast addresses of iface, or of every interface up but loopback.
func interfaceIPs(iface *net.Interface) ([]net.IP, error) {
	ifaces := []net.Interface{}
	if iface != nil {
		ifaces = append(ifaces, *iface)
	} else {
		all, err := net.Interfaces()
		if err != nil {
			return nil, fmt.Errorf("listing network interfaces: %w", err)
		}
		for _, i := range all {
			if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagLoopback == 0 {
				ifaces = append(ifaces, i)
			}
		}
	}
	var ips []net.IP
	for _, i := range ifaces {
		addrs, err := i.Addrs()
		if err != nil {
			return nil, fmt.Errorf("addresses of interface %s: %w", i.Name, err)
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
				ips = append(ips, n.IP)
			}
		}
	}
	if len(ips) == 0 {
		return nil, errors.New("no address to announce the API server's host at: give its IP addresses or an interface that has one")
	}
	return ips, nil
}

// interfaceByName is the named interface; nil for "".
func interfaceByName(name string) (*net.Interface, error) {
	if name == "" {
		return nil, nil
	}
	iface, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("network interface %q: %w", name, err)
	}
	return iface, nil
}

// multicastSender is a UDP socket that multicasts on iface (nil: the default interface), with
// the TTL of 255 RFC 6762 section 11 asks for.
func multicastSender(iface *net.Interface) (*net.UDPConn, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		return nil, fmt.Errorf("opening a UDP socket: %w", err)
	}
	p := ipv4.NewPacketConn(conn)
	if err := p.SetMulticastTTL(255); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("setting the multicast TTL: %w", err)
	}
	if iface != nil {
		if err := p.SetMulticastInterface(iface); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("multicasting on interface %s: %w", iface.Name, err)
		}
	}
	return conn, nil
}

// checkTXT checks a TXT record's size: each string at most 255 bytes, all of them (with their
// length bytes) at most MaxTXTBytes.
func checkTXT(txt []string) error {
	total := 0
	for _, s := range txt {
		if len(s) > 255 {
			return fmt.Errorf("string %q has %d bytes, more than 255", s[:32]+"...", len(s))
		}
		total += 1 + len(s)
	}
	if total > MaxTXTBytes {
		return fmt.Errorf("%d bytes, more than %d", total, MaxTXTBytes)
	}
	return nil
}

// stdLogger is a standard logger writing to l, for hashicorp/mdns.
func stdLogger(l logr.Logger) *log.Logger {
	return log.New(logWriter{l}, "", 0)
}

// logWriter writes each line to a logr.Logger.
type logWriter struct{ l logr.Logger }

// Write logs p as one line.
func (w logWriter) Write(p []byte) (int, error) {
	w.l.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}
