package testenv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// DNSServer is an authoritative DNS server for tests, in the test's own process: it answers
// from the records added to it, over UDP and TCP on the same port of 127.0.0.1. A name with
// records answers NOERROR (with no answer for a type it has none of), any other name NXDOMAIN.
// A UDP answer longer than the client's limit (512 bytes, or its EDNS0 payload size) is
// truncated (TC bit, no records), as real servers do, so that the client retries over TCP.
type DNSServer struct {
	// Addr is host:port of the server (UDP and TCP), e.g. 127.0.0.1:40053.
	Addr string

	udp *net.UDPConn
	tcp *net.TCPListener
	wg  sync.WaitGroup

	connsMu sync.Mutex
	conns   map[net.Conn]bool // open TCP connections, closed by Close

	mu      sync.Mutex
	records map[string][]dnsmessage.Resource // by lower-case FQDN
	silent  bool                             // read queries, never answer
	rcode   dnsmessage.RCode                 // answer every query with this code when not Success
	queries []string                         // "udp PTR name." for each query answered or dropped
}

// NewDNSServer starts a DNSServer for the test and stops it when the test ends.
func NewDNSServer(tb testing.TB) *DNSServer {
	tb.Helper()
	s, err := StartDNSServer()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// StartDNSServer starts a DNSServer on a free port of 127.0.0.1 (the same for UDP and TCP).
// Close stops it.
func StartDNSServer() (*DNSServer, error) {
	var lastErr error
	for range 10 { // the UDP port may be taken for TCP: try another
		udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, fmt.Errorf("DNS server: listening on UDP: %w", err)
		}
		addr, _ := udp.LocalAddr().(*net.UDPAddr)
		tcp, err := net.ListenTCP("tcp", &net.TCPAddr{IP: addr.IP, Port: addr.Port})
		if err != nil {
			_ = udp.Close()
			lastErr = err
			continue
		}
		s := &DNSServer{Addr: addr.String(), udp: udp, tcp: tcp, records: map[string][]dnsmessage.Resource{}}
		s.wg.Add(2)
		go s.serveUDP()
		go s.serveTCP()
		return s, nil
	}
	return nil, fmt.Errorf("DNS server: listening on TCP at the UDP port: %w", lastErr)
}

// Close stops the server, closing its connections, and waits for its goroutines.
func (s *DNSServer) Close() {
	_ = s.udp.Close()
	_ = s.tcp.Close()
	s.connsMu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.connsMu.Unlock()
	s.wg.Wait()
}

// fqdn is name in lower case with its trailing dot.
func fqdn(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, ".")) + "."
}

// mustName makes a dnsmessage name (with its trailing dot) or panics: the tests' names are
// literals.
func mustName(name string) dnsmessage.Name {
	return dnsmessage.MustNewName(strings.TrimSuffix(name, ".") + ".")
}

// Add adds a record of name (with or without its trailing dot; case is kept in answers).
func (s *DNSServer) Add(name string, body dnsmessage.ResourceBody) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fqdn(name)
	s.records[key] = append(s.records[key], dnsmessage.Resource{
		Header: dnsmessage.ResourceHeader{Name: mustName(name), Class: dnsmessage.ClassINET, TTL: 60},
		Body:   body,
	})
}

// AddPTR adds a PTR record: name points to target (a DNS-SD service to one of its instances).
func (s *DNSServer) AddPTR(name, target string) {
	s.Add(name, &dnsmessage.PTRResource{PTR: mustName(target)})
}

// AddSRV adds an SRV record: the service of name is at target:port.
func (s *DNSServer) AddSRV(name string, priority, weight, port uint16, target string) {
	s.Add(name, &dnsmessage.SRVResource{Priority: priority, Weight: weight, Port: port, Target: mustName(target)})
}

// AddTXT adds a TXT record of the given strings (each one up to 255 bytes, sent as is).
func (s *DNSServer) AddTXT(name string, txt ...string) {
	s.Add(name, &dnsmessage.TXTResource{TXT: txt})
}

// AddIP adds an A record (an IPv4 address) or an AAAA record (an IPv6 one).
func (s *DNSServer) AddIP(name string, ip netip.Addr) {
	if ip.Unmap().Is4() {
		s.Add(name, &dnsmessage.AResource{A: ip.Unmap().As4()})
		return
	}
	s.Add(name, &dnsmessage.AAAAResource{AAAA: ip.As16()})
}

// AddCNAME adds a CNAME record: name is an alias of target.
func (s *DNSServer) AddCNAME(name, target string) {
	s.Add(name, &dnsmessage.CNAMEResource{CNAME: mustName(target)})
}

// Remove removes every record of name.
func (s *DNSServer) Remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, fqdn(name))
}

// SetSilent makes the server read queries and never answer (a nameserver that is down, or a
// firewall dropping its packets), or answer again.
func (s *DNSServer) SetSilent(silent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silent = silent
}

// FailWith makes the server answer every query with rcode (e.g. dnsmessage.RCodeServerFailure)
// and no records; dnsmessage.RCodeSuccess answers from the records again.
func (s *DNSServer) FailWith(rcode dnsmessage.RCode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcode = rcode
}

// Queries returns the queries received so far, each as "udp PTR name." or "tcp SRV name.".
func (s *DNSServer) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

func (s *DNSServer) serveUDP() {
	defer s.wg.Done()
	buf := make([]byte, 65535)
	for {
		n, from, err := s.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		out, ok := s.answer(buf[:n], "udp")
		if ok {
			_, _ = s.udp.WriteToUDPAddrPort(out, from)
		}
	}
}

func (s *DNSServer) serveTCP() {
	defer s.wg.Done()
	for {
		conn, err := s.tcp.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		s.connsMu.Lock()
		if s.conns == nil {
			s.conns = map[net.Conn]bool{}
		}
		s.conns[conn] = true
		s.connsMu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveTCPConn(conn)
			s.connsMu.Lock()
			delete(s.conns, conn)
			s.connsMu.Unlock()
			_ = conn.Close()
		}()
	}
}

// serveTCPConn answers the length-prefixed queries of one connection until the client closes
// it (or stays idle for 10 s).
func (s *DNSServer) serveTCPConn(conn net.Conn) {
	for {
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		var size [2]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(conn, msg); err != nil {
			return
		}
		out, ok := s.answer(msg, "tcp")
		if !ok {
			continue
		}
		if _, err := conn.Write(binary.BigEndian.AppendUint16(nil, uint16(len(out)))); err != nil { //nolint:gosec // a DNS message is at most 65535 bytes
			return
		}
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

// answer builds the response to one query; false: no response (silent, or not a query).
func (s *DNSServer) answer(query []byte, transport string) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	limit := 512
	if transport == "udp" {
		if err := p.SkipAllQuestions(); err == nil {
			if err := p.SkipAllAnswers(); err == nil {
				if err := p.SkipAllAuthorities(); err == nil {
					for {
						rh, err := p.AdditionalHeader()
						if err != nil {
							break
						}
						if rh.Type == dnsmessage.TypeOPT && int(rh.Class) > limit {
							limit = int(rh.Class) // EDNS0: the class is the client's UDP payload size
						}
						if err := p.SkipAdditional(); err != nil {
							break
						}
					}
				}
			}
		}
	} else {
		limit = 65535
	}

	s.mu.Lock()
	s.queries = append(s.queries, fmt.Sprintf("%s %s %s", transport, strings.TrimPrefix(q.Type.String(), "Type"), q.Name.String()))
	silent, rcode := s.silent, s.rcode
	answers, exists := s.lookup(q)
	s.mu.Unlock()
	if silent {
		return nil, false
	}

	resp := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	switch {
	case rcode != dnsmessage.RCodeSuccess:
		resp.RCode, answers = rcode, nil
	case !exists:
		resp.RCode = dnsmessage.RCodeNameError
	}
	out, err := build(resp, q, answers)
	if err != nil {
		return nil, false
	}
	if len(out) > limit {
		resp.Truncated = true
		if out, err = build(resp, q, nil); err != nil {
			return nil, false
		}
	}
	return out, true
}

// lookup finds the answers to q, following CNAME records (up to 8) as a recursive resolver
// does; exists is false when q's name has no records at all. Called with s.mu held.
func (s *DNSServer) lookup(q dnsmessage.Question) (answers []dnsmessage.Resource, exists bool) {
	name := fqdn(q.Name.String())
	for range 8 {
		records, ok := s.records[name]
		if !ok {
			return answers, len(answers) > 0
		}
		var alias string
		for _, r := range records {
			if t := bodyType(r.Body); t == q.Type {
				answers = append(answers, r)
			} else if c, isCNAME := r.Body.(*dnsmessage.CNAMEResource); isCNAME {
				answers, alias = append(answers, r), fqdn(c.CNAME.String())
			}
		}
		if alias == "" || q.Type == dnsmessage.TypeCNAME {
			return answers, true
		}
		name = alias
	}
	return answers, true
}

// bodyType is the type of a record's body.
func bodyType(b dnsmessage.ResourceBody) dnsmessage.Type {
	switch b.(type) {
	case *dnsmessage.PTRResource:
		return dnsmessage.TypePTR
	case *dnsmessage.SRVResource:
		return dnsmessage.TypeSRV
	case *dnsmessage.TXTResource:
		return dnsmessage.TypeTXT
	case *dnsmessage.AResource:
		return dnsmessage.TypeA
	case *dnsmessage.AAAAResource:
		return dnsmessage.TypeAAAA
	case *dnsmessage.CNAMEResource:
		return dnsmessage.TypeCNAME
	default:
		return 0
	}
}

// build packs a response of one question and its answers.
func build(h dnsmessage.Header, q dnsmessage.Question, answers []dnsmessage.Resource) ([]byte, error) {
	b := dnsmessage.NewBuilder(nil, h)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, fmt.Errorf("building a DNS answer: %w", err)
	}
	if err := b.Question(q); err != nil {
		return nil, fmt.Errorf("building a DNS answer: %w", err)
	}
	if err := b.StartAnswers(); err != nil {
		return nil, fmt.Errorf("building a DNS answer: %w", err)
	}
	for _, r := range answers {
		r.Header.Type = bodyType(r.Body)
		var err error
		switch body := r.Body.(type) {
		case *dnsmessage.PTRResource:
			err = b.PTRResource(r.Header, *body)
		case *dnsmessage.SRVResource:
			err = b.SRVResource(r.Header, *body)
		case *dnsmessage.TXTResource:
			err = b.TXTResource(r.Header, *body)
		case *dnsmessage.AResource:
			err = b.AResource(r.Header, *body)
		case *dnsmessage.AAAAResource:
			err = b.AAAAResource(r.Header, *body)
		case *dnsmessage.CNAMEResource:
			err = b.CNAMEResource(r.Header, *body)
		default:
			err = fmt.Errorf("record type %T not supported", body)
		}
		if err != nil {
			return nil, fmt.Errorf("building a DNS answer: %w", err)
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("building a DNS answer: %w", err)
	}
	return out, nil
}
