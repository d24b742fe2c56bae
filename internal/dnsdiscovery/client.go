package dnsdiscovery

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

const (
	// udpPayloadSize is the EDNS0 UDP payload size we announce (the DNS flag day 2020 value):
	// larger answers come truncated and are asked again over TCP.
	udpPayloadSize = 1232
	// retransmit is how long to wait for a UDP answer before sending the query again.
	retransmit = time.Second
	// maxCNAMEs is how many CNAME records an answer may chain.
	maxCNAMEs = 8
)

// answer is what a nameserver said about one name and type.
type answer struct {
	records  []dnsmessage.Resource // of the type asked, for the name or the end of its CNAME chain
	notFound bool                  // NXDOMAIN
	server   string                // the nameserver that answered
}

// client asks nameservers in turn, starting with the one that answered last.
type client struct {
	nameservers []string     // host:port
	last        atomic.Int32 // index of the nameserver that answered last
}

// query asks the nameservers, in turn, for the records of type typ at name (a FQDN with its
// trailing dot). A nameserver that does not answer, or answers with an error code other than
// NXDOMAIN, leaves the question to the next one; the error names each.
func (c *client) query(ctx context.Context, name string, typ dnsmessage.Type) (*answer, error) {
	qname, err := dnsmessage.NewName(name)
	if err != nil {
		return nil, fmt.Errorf("%q is not a DNS name: %w", name, err)
	}
	q := dnsmessage.Question{Name: qname, Type: typ, Class: dnsmessage.ClassINET}
	var errs []error
	n, first := len(c.nameservers), int(c.last.Load())
	for i := range n {
		ns := c.nameservers[(first+i)%n]
		// Each nameserver left gets an equal share of the time left.
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if deadline, ok := ctx.Deadline(); ok && i < n-1 {
			sctx, cancel = context.WithTimeout(ctx, time.Until(deadline)/time.Duration(n-i))
		}
		a, err := exchange(sctx, ns, q)
		cancel()
		if err == nil {
			c.last.Store(int32((first + i) % n)) //nolint:gosec // a handful of nameservers
			a.server = ns
			return a, nil
		}
		errs = append(errs, fmt.Errorf("nameserver %s: %w", ns, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// exchange asks one nameserver over UDP, and again over TCP when the answer comes truncated.
func exchange(ctx context.Context, server string, q dnsmessage.Question) (*answer, error) {
	id, query, err := newQuery(q)
	if err != nil {
		return nil, err
	}
	resp, err := exchangeUDP(ctx, server, id, q, query)
	if err != nil {
		return nil, err
	}
	h, err := resp.Start()
	if err != nil {
		return nil, err
	}
	if h.Truncated {
		resp, err = exchangeTCP(ctx, server, id, q, query)
		if err != nil {
			return nil, fmt.Errorf("the UDP answer was truncated; over TCP: %w", err)
		}
		if h, err = resp.Start(); err != nil {
			return nil, err
		}
	}
	return readAnswer(h, resp, q)
}

// newQuery packs a recursive query for q with an EDNS0 record announcing udpPayloadSize.
func newQuery(q dnsmessage.Question) (uint16, []byte, error) {
	var idb [2]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return 0, nil, fmt.Errorf("making a query ID: %w", err)
	}
	id := binary.BigEndian.Uint16(idb[:])
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	b.EnableCompression()
	var opt dnsmessage.ResourceHeader
	err := errors.Join(b.StartQuestions(), b.Question(q), b.StartAdditionals(),
		opt.SetEDNS0(udpPayloadSize, dnsmessage.RCodeSuccess, false))
	if err == nil {
		err = b.OPTResource(opt, dnsmessage.OPTResource{})
	}
	if err != nil {
		return 0, nil, fmt.Errorf("building the query: %w", err)
	}
	msg, err := b.Finish()
	if err != nil {
		return 0, nil, fmt.Errorf("building the query: %w", err)
	}
	return id, msg, nil
}

// response is a message received, ready to parse.
type response struct {
	msg []byte
	p   dnsmessage.Parser
}

// Start parses the header.
func (r *response) Start() (dnsmessage.Header, error) {
	h, err := r.p.Start(r.msg)
	if err != nil {
		return h, fmt.Errorf("parsing the answer: %w", err)
	}
	return h, nil
}

// matches reports whether msg answers the query id for q (a late answer to an earlier query, or
// a forged one, does not).
func matches(msg []byte, id uint16, q dnsmessage.Question) bool {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil || !h.Response || h.ID != id {
		return false
	}
	got, err := p.Question()
	return err == nil && got.Type == q.Type && got.Class == q.Class && strings.EqualFold(got.Name.String(), q.Name.String())
}

// exchangeUDP sends the query over UDP, again every second, until an answer comes or ctx ends.
func exchangeUDP(ctx context.Context, server string, id uint16, q dnsmessage.Question, query []byte) (*response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", server)
	if err != nil {
		return nil, fmt.Errorf("dialing UDP: %w", err)
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 65535)
	for {
		deadline, hasDeadline := ctx.Deadline()
		if hasDeadline && !time.Now().Before(deadline) {
			<-ctx.Done() // its timer fires a moment after the deadline: do not spin meanwhile
		}
		if ctx.Err() != nil {
			return nil, ctxErr(ctx, ctx.Err())
		}
		if _, err := conn.Write(query); err != nil {
			return nil, ctxErr(ctx, fmt.Errorf("sending the query over UDP: %w", err))
		}
		wait := time.Now().Add(retransmit)
		if hasDeadline && deadline.Before(wait) {
			wait = deadline
		}
		_ = conn.SetReadDeadline(wait)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				var nerr net.Error
				if errors.As(err, &nerr) && nerr.Timeout() {
					break // send again, or give up when ctx has ended
				}
				return nil, ctxErr(ctx, fmt.Errorf("reading the answer over UDP: %w", err))
			}
			if matches(buf[:n], id, q) {
				return &response{msg: append([]byte(nil), buf[:n]...)}, nil
			}
		}
	}
}

// exchangeTCP sends the query over TCP (RFC 1035 4.2.2: a two-byte length, then the message).
func exchangeTCP(ctx context.Context, server string, id uint16, q dnsmessage.Question, query []byte) (*response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", server)
	if err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("dialing TCP: %w", err))
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if len(query) > 65535 {
		return nil, errors.New("the query is too long for TCP")
	}
	msg := binary.BigEndian.AppendUint16(nil, uint16(len(query))) //nolint:gosec // checked above
	if _, err := conn.Write(append(msg, query...)); err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("sending the query over TCP: %w", err))
	}
	var size [2]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("reading the answer over TCP: %w", err))
	}
	out := make([]byte, binary.BigEndian.Uint16(size[:]))
	if _, err := io.ReadFull(conn, out); err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("reading the answer over TCP: %w", err))
	}
	if !matches(out, id, q) {
		return nil, errors.New("the TCP answer is not for our query")
	}
	return &response{msg: out}, nil
}

// ctxErr says that the time ran out when ctx ended, else returns err.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("no answer in time (%w)", context.Cause(ctx))
	}
	return err
}

// readAnswer checks the answer's code and collects its records of q's type, at q's name or at
// the end of the CNAME chain that starts there.
func readAnswer(h dnsmessage.Header, resp *response, q dnsmessage.Question) (*answer, error) {
	switch h.RCode {
	case dnsmessage.RCodeSuccess:
	case dnsmessage.RCodeNameError:
		return &answer{notFound: true}, nil
	default:
		return nil, fmt.Errorf("answered %s", strings.TrimPrefix(h.RCode.String(), "RCode"))
	}
	if err := resp.p.SkipAllQuestions(); err != nil {
		return nil, fmt.Errorf("parsing the answer: %w", err)
	}
	all, err := resp.p.AllAnswers()
	if err != nil {
		return nil, fmt.Errorf("parsing the answer to %s %s: %w", typeName(q.Type), q.Name.String(), err)
	}
	aliases := map[string]string{}
	for _, r := range all {
		if c, ok := r.Body.(*dnsmessage.CNAMEResource); ok {
			aliases[strings.ToLower(r.Header.Name.String())] = strings.ToLower(c.CNAME.String())
		}
	}
	names := map[string]bool{}
	for n, i := strings.ToLower(q.Name.String()), 0; i <= maxCNAMEs && n != "" && !names[n]; i++ {
		names[n] = true
		n = aliases[n]
	}
	a := &answer{}
	for _, r := range all {
		if r.Header.Type == q.Type && r.Header.Class == q.Class && names[strings.ToLower(r.Header.Name.String())] {
			a.records = append(a.records, r)
		}
	}
	return a, nil
}

// typeName is a record type as zone files write it: PTR, SRV, TXT.
func typeName(t dnsmessage.Type) string { return strings.TrimPrefix(t.String(), "Type") }
