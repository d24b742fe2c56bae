package landiscovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/dnsdiscovery"
)

const (
	// DefaultTimeout is how long a browse listens.
	DefaultTimeout = 3 * time.Second
	// MaxTimeout bounds a browse.
	MaxTimeout = time.Minute
)

// BrowseOptions says where and how long to browse.
type BrowseOptions struct {
	// Interface is the network interface to browse on; empty: the system's default multicast
	// interface.
	Interface string
	// Timeout is how long to listen; zero: DefaultTimeout; at most MaxTimeout.
	Timeout time.Duration
	// Log receives the announcements left out and why; the zero logger drops them.
	Log logr.Logger
}

// ValidateTimeout checks a browse's timeout: positive, at most MaxTimeout.
func ValidateTimeout(d time.Duration) error {
	if d <= 0 || d > MaxTimeout {
		return fmt.Errorf("timeout %s is not between 0s and %s: LAN discovery listens that long", d, MaxTimeout)
	}
	return nil
}

// Browse asks for the clusters announced on the link, listens for opts.Timeout (in the
// calling thread's network namespace) and returns those found, sorted by name. Announcements
// that are malformed, too large, lack a cluster ID or are withdrawn (TTL 0) are left out, each
// with a log line; a cluster found is one whose PTR, SRV, TXT and address records all came.
func Browse(ctx context.Context, opts BrowseOptions) (*dnsdiscovery.Result, error) {
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if err := ValidateTimeout(opts.Timeout); err != nil {
		return nil, err
	}
	iface, err := interfaceByName(opts.Interface)
	if err != nil {
		return nil, fmt.Errorf("LAN discovery: %w", err)
	}
	group, err := net.ListenMulticastUDP("udp4", iface, groupAddr)
	if err != nil {
		return nil, fmt.Errorf("LAN discovery: joining the mDNS group %s on interface %q: %w", groupAddr, opts.Interface, err)
	}
	defer func() { _ = group.Close() }()
	querier, err := multicastSender(iface)
	if err != nil {
		return nil, fmt.Errorf("LAN discovery: %w", err)
	}
	defer func() { _ = querier.Close() }()

	msgs := make(chan *dns.Msg, 64)
	deadline := time.Now().Add(opts.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for _, c := range []*net.UDPConn{group, querier} {
		_ = c.SetReadDeadline(deadline)
		go receive(c, msgs, opts.Log)
	}
	query := &dns.Msg{}
	query.SetQuestion(serviceName, dns.TypePTR)
	query.RecursionDesired = false
	ask := func() error {
		buf, err := query.Pack()
		if err == nil {
			_, err = querier.WriteToUDP(buf, groupAddr)
		}
		if err != nil {
			return fmt.Errorf("LAN discovery: sending the query for %s on interface %q: %w", serviceName, opts.Interface, err)
		}
		return nil
	}
	if err := ask(); err != nil {
		return nil, err
	}
	again := time.NewTimer(time.Second)
	defer again.Stop()
	end := time.NewTimer(time.Until(deadline))
	defer end.Stop()
	c := newCache()
	for {
		select {
		case m := <-msgs:
			c.add(m)
		case <-again.C:
			_ = ask() // a lost query: the first one's error was reported
		case <-end.C:
			return c.result(opts), nil
		case <-ctx.Done():
			return nil, fmt.Errorf("LAN discovery: %w", context.Cause(ctx))
		}
	}
}

// receive reads mDNS responses from conn into msgs until conn's deadline; what does not
// parse is logged and left out.
func receive(conn *net.UDPConn, msgs chan<- *dns.Msg, log logr.Logger) {
	buf := make([]byte, 9000) // RFC 6762 section 17: at most 9000 bytes
	for {
		n, from, err := conn.ReadFromUDP(buf)
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				log.V(1).Info("LAN discovery: reading stopped", "error", err.Error())
			}
			return
		}
		m := &dns.Msg{}
		if err := m.Unpack(buf[:n]); err != nil {
			log.Info("LAN discovery: ignoring a malformed mDNS packet", "from", from.String(), "error", err.Error())
			continue
		}
		if !m.Response {
			continue
		}
		select {
		case msgs <- m:
		default:
			log.Info("LAN discovery: too many mDNS responses, one dropped", "from", from.String())
		}
	}
}

// cache holds the records received, by lower-case owner name; a record with TTL 0 removes
// what was received for its name and type.
type cache struct {
	ptr   map[string]string // instance name -> instance name as received
	srv   map[string]*dns.SRV
	txt   map[string]*dns.TXT
	addrs map[string][]net.IP
}

// newCache is an empty cache.
func newCache() *cache {
	return &cache{ptr: map[string]string{}, srv: map[string]*dns.SRV{}, txt: map[string]*dns.TXT{}, addrs: map[string][]net.IP{}}
}

// add keeps the records of m that concern the service.
func (c *cache) add(m *dns.Msg) {
	for _, rr := range append(append(m.Answer, m.Ns...), m.Extra...) {
		name := strings.ToLower(rr.Header().Name)
		gone := rr.Header().Ttl == 0
		switch r := rr.(type) {
		case *dns.PTR:
			if name != strings.ToLower(serviceName) {
				continue
			}
			if gone {
				delete(c.ptr, strings.ToLower(r.Ptr))
			} else {
				c.ptr[strings.ToLower(r.Ptr)] = r.Ptr
			}
		case *dns.SRV:
			c.srv[name] = r
			if gone {
				delete(c.srv, name)
			}
		case *dns.TXT:
			c.txt[name] = r
			if gone {
				delete(c.txt, name)
			}
		case *dns.A:
			c.addAddr(name, r.A, gone)
		case *dns.AAAA:
			c.addAddr(name, r.AAAA, gone)
		}
	}
}

// addAddr keeps (or, gone, forgets) an address of a host.
func (c *cache) addAddr(name string, ip net.IP, gone bool) {
	kept := c.addrs[name][:0:0]
	for _, a := range c.addrs[name] {
		if !a.Equal(ip) {
			kept = append(kept, a)
		}
	}
	if !gone {
		kept = append(kept, ip)
	}
	c.addrs[name] = kept
}

// result is the clusters complete in the cache, sorted by name; the others are logged.
func (c *cache) result(opts BrowseOptions) *dnsdiscovery.Result {
	res := &dnsdiscovery.Result{ServiceName: serviceName, Nameserver: groupAddr.String()}
	if opts.Interface != "" {
		res.Nameserver += "%" + opts.Interface
	}
	for key, inst := range c.ptr {
		cl, err := c.cluster(key, inst)
		if err != nil {
			opts.Log.Info("LAN discovery: ignoring an announcement", "instance", inst, "reason", err.Error())
			res.Warnings = append(res.Warnings, fmt.Sprintf("announcement %s ignored: %v", inst, err))
			continue
		}
		res.Clusters = append(res.Clusters, *cl)
	}
	sort.Slice(res.Clusters, func(i, j int) bool { return res.Clusters[i].Name < res.Clusters[j].Name })
	sort.Strings(res.Warnings)
	return res
}

// cluster reads one instance's records.
func (c *cache) cluster(key, inst string) (*dnsdiscovery.Cluster, error) {
	srv, txt := c.srv[key], c.txt[key]
	switch {
	case srv == nil:
		return nil, errors.New("no SRV record came")
	case txt == nil:
		return nil, errors.New("no TXT record came")
	case srv.Port == 0 || srv.Target == ".":
		return nil, fmt.Errorf("its SRV record (%s port %d) names no service", srv.Target, srv.Port)
	}
	strs, err := rawTXT(txt)
	if err != nil {
		return nil, fmt.Errorf("its TXT record: %w", err)
	}
	if err := checkTXT(strs); err != nil {
		return nil, fmt.Errorf("its TXT record: %w", err)
	}
	kv, err := dnsdiscovery.ParseTXT(strs)
	if err != nil {
		return nil, fmt.Errorf("its TXT record: %w", err)
	}
	id, ok := kv[consts.DiscoveryTXTClusterID]
	if !ok {
		return nil, fmt.Errorf("its TXT record has no %s key", consts.DiscoveryTXTClusterID)
	}
	if err := dnsdiscovery.ValidateClusterID(id); err != nil {
		return nil, fmt.Errorf("its TXT record has %s=%q: %w", consts.DiscoveryTXTClusterID, id, err)
	}
	host := strings.TrimSuffix(srv.Target, ".")
	addrs := c.addrs[strings.ToLower(srv.Target)]
	if strings.HasSuffix(strings.ToLower(host), ".local") {
		// A name only mDNS resolves: its address instead, IPv4 first.
		if len(addrs) == 0 {
			return nil, fmt.Errorf("no address record came for its host %s", srv.Target)
		}
		sort.SliceStable(addrs, func(i, j int) bool { return addrs[i].To4() != nil && addrs[j].To4() == nil })
		host = addrs[0].String()
	}
	name := strings.TrimSuffix(inst, "."+serviceName)
	return &dnsdiscovery.Cluster{
		Name: name, ClusterID: id, TXT: kv,
		Endpoints: []dnsdiscovery.Endpoint{{Host: host, Port: srv.Port, Priority: srv.Priority, Weight: srv.Weight}},
	}, nil
}

// rawTXT is a TXT record's strings as sent: miekg/dns keeps them in presentation form, with
// bytes that are not printable escaped (\DDD), so they are read back from the wire form.
func rawTXT(t *dns.TXT) ([]string, error) {
	buf := make([]byte, dns.MaxMsgSize)
	end, err := dns.PackRR(t, buf, 0, nil, false)
	if err != nil {
		return nil, fmt.Errorf("packing it back: %w", err)
	}
	rdata := buf[end-int(t.Hdr.Rdlength) : end]
	var out []string
	for len(rdata) > 0 {
		n := int(rdata[0])
		if 1+n > len(rdata) {
			return nil, errors.New("a string runs past the record's end")
		}
		out = append(out, string(rdata[1:1+n]))
		rdata = rdata[1+n:]
	}
	return out, nil
}

// ValidateInterface checks a network interface's name as Linux allows it: 1 to 15 bytes,
// no '/', ':' or white space, not "." or "..".
func ValidateInterface(name string) error {
	switch {
	case name == "" || len(name) > 15:
		return fmt.Errorf("%q is not a network interface name: it must have 1 to 15 characters", name)
	case name == "." || name == ".." || strings.ContainsAny(name, "/: \t\n"):
		return fmt.Errorf("%q is not a network interface name (e.g. eth0): no '/', ':' or spaces", name)
	}
	return nil
}
