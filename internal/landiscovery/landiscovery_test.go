package landiscovery_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/miekg/dns"

	"github.com/peerkit/terraform-provider-liqo/internal/dnsdiscovery"
	"github.com/peerkit/terraform-provider-liqo/internal/landiscovery"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// logLines is a logger that keeps its lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

// logger writes to l.
func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
}

// has says whether a line holds all of parts.
func (l *logLines) has(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// String is all the lines.
func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// announce starts an announcer in namespace ns; the returned function stops it and waits.
func announce(t *testing.T, ns string, opts landiscovery.AnnounceOptions) func() {
	t.Helper()
	var a *landiscovery.Announcer
	if err := netns.Do(ns, func() (err error) {
		a, err = landiscovery.NewAnnouncer(opts)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("announcer of %s: %v", opts.ClusterID, err)
		}
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(stop) })
	return func() { once.Do(stop) }
}

// browse browses from the LAN's hub on the bridge.
func browse(t *testing.T, l *testenv.LAN, timeout time.Duration, log logr.Logger) *dnsdiscovery.Result {
	t.Helper()
	var res *dnsdiscovery.Result
	if err := netns.Do(l.Hub, func() (err error) {
		res, err = landiscovery.Browse(context.Background(), landiscovery.BrowseOptions{Interface: l.Bridge, Timeout: timeout, Log: log})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return res
}

// summary is the clusters found, one "name id host:port txt" each.
func summary(res *dnsdiscovery.Result) []string {
	var out []string
	for _, c := range res.Clusters {
		var eps []string
		for _, e := range c.Endpoints {
			eps = append(eps, net.JoinHostPort(e.Host, fmt.Sprint(e.Port)))
		}
		out = append(out, fmt.Sprintf("%s %s %s %v", c.Name, c.ClusterID, strings.Join(eps, ","), c.TXT))
	}
	return out
}

// Two clusters announced from two namespaces are found from a third with their IDs, API
// servers and TXT keys; nothing is found before they announce (LAN discovery off); a cluster
// stopped is withdrawn: a browse running when it stops (the goodbye) and a later one do not
// list it.
func TestAnnounceBrowseWithdraw(t *testing.T) {
	l := testenv.NewLAN(t, 2, false)
	logs := &logLines{}

	if got := summary(browse(t, l, 1500*time.Millisecond, logs.logger())); len(got) != 0 {
		t.Fatalf("nothing announced yet, found %v", got)
	}

	stopRome := announce(t, l.Members[0].NS, landiscovery.AnnounceOptions{ClusterID: "cl-rome", Host: l.Members[0].Addr, Port: 6443,
		Version: "v1.2.0", Shares: "50%", Interface: l.Members[0].Iface, Log: logs.logger()})
	announce(t, l.Members[1].NS, landiscovery.AnnounceOptions{ClusterID: "cl-turin", Host: "api.turin.example.com", Port: 443,
		IPs: []net.IP{net.ParseIP(l.Members[1].Addr)}, Version: "v1.2.0", Shares: "cpu=8,memory=16Gi", Interface: l.Members[1].Iface})
	want := []string{
		"cl-rome cl-rome " + l.Members[0].Addr + ":6443 map[cluster-id:cl-rome shares:50% version:v1.2.0]",
		"cl-turin cl-turin api.turin.example.com:443 map[cluster-id:cl-turin shares:cpu=8,memory=16Gi version:v1.2.0]",
	}
	start := time.Now()
	res := browse(t, l, 2*time.Second, logs.logger())
	if got := summary(res); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("found %q, want %q\nlog:\n%s", got, want, logs)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("a browse of 2s took %s", time.Since(start))
	}
	if u := res.Clusters[0].Endpoints[0].URL(); u != "https://"+l.Members[0].Addr+":6443" {
		t.Errorf("rome's URL %s, want https://%s:6443", u, l.Members[0].Addr)
	}

	// Stopped while a browse runs: its goodbye takes back what the browse received.
	during := make(chan *dnsdiscovery.Result, 1)
	go func() { during <- browse(t, l, 3*time.Second, logs.logger()) }()
	time.Sleep(1500 * time.Millisecond)
	stopRome()
	if got := summary(<-during); fmt.Sprint(got) != fmt.Sprint(want[1:]) {
		t.Errorf("browse while rome stopped found %q, want only %q\nlog:\n%s", got, want[1:], logs)
	}
	if got := summary(browse(t, l, 2*time.Second, logs.logger())); fmt.Sprint(got) != fmt.Sprint(want[1:]) {
		t.Errorf("browse after rome stopped found %q, want only %q", got, want[1:])
	}
	if !logs.has("cluster withdrawn", "cl-rome") {
		t.Errorf("no log line says rome was withdrawn:\n%s", logs)
	}
}

// bad is a hand-built announcement of instance name with the given TXT strings.
func bad(name, addr string, txt ...string) []dns.RR {
	inst := name + "._liqo._tcp.local."
	host := name + ".local."
	hdr := func(n string, t uint16) dns.RR_Header {
		return dns.RR_Header{Name: n, Rrtype: t, Class: dns.ClassINET, Ttl: 120}
	}
	return []dns.RR{
		&dns.PTR{Hdr: hdr("_liqo._tcp.local.", dns.TypePTR), Ptr: inst},
		&dns.SRV{Hdr: hdr(inst, dns.TypeSRV), Port: 6443, Target: host},
		&dns.TXT{Hdr: hdr(inst, dns.TypeTXT), Txt: txt},
		&dns.A{Hdr: hdr(host, dns.TypeA), A: net.ParseIP(addr)},
	}
}

// Malformed announcements (a packet that does not parse, a TXT record without cluster ID, with
// an invalid one, one too large, one with a key that is not text) are left out, each with a log
// line, while a good one next to them is found.
func TestMalformedAnnouncementsIgnored(t *testing.T) {
	l := testenv.NewLAN(t, 2, false)
	logs := &logLines{}
	announce(t, l.Members[0].NS, landiscovery.AnnounceOptions{ClusterID: "cl-good", Host: l.Members[0].Addr, Port: 6443, Interface: l.Members[0].Iface})

	big := strings.Repeat("x", 250)
	msg := &dns.Msg{MsgHdr: dns.MsgHdr{Response: true, Authoritative: true}}
	for _, rrs := range [][]dns.RR{
		bad("noid", l.Members[1].Addr, "version=v1"),
		bad("badid", l.Members[1].Addr, "cluster-id=CL_Bad"),
		bad("huge", l.Members[1].Addr, "cluster-id=cl-huge", "a="+big, "b="+big, "c="+big, "d="+big, "e="+big, "f="+big),
		bad("binkey", l.Members[1].Addr, "cluster-id=cl-binkey", "k\x01=v"),
	} {
		msg.Answer = append(msg.Answer, rrs...)
	}
	packet, err := msg.Pack()
	if err != nil {
		t.Fatal(err)
	}
	var conn *net.UDPConn
	if err := netns.Do(l.Members[1].NS, func() (err error) {
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(l.Members[1].Addr)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	group := &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251), Port: 5353}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // unsolicited, every 200ms while the browse listens
		for {
			_, _ = conn.WriteToUDP(packet, group)
			_, _ = conn.WriteToUDP([]byte{0, 0, 0x84, 0, 0, 9, 0, 1, 2}, group) // a header that lies
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()

	res := browse(t, l, 2*time.Second, logs.logger())
	want := []string{"cl-good cl-good " + l.Members[0].Addr + ":6443 map[cluster-id:cl-good]"}
	if got := summary(res); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("found %q, want %q", got, want)
	}
	for _, line := range [][]string{
		{"malformed mDNS packet", l.Members[1].Addr + ":"},
		{"ignoring an announcement", "noid._liqo._tcp.local.", "no cluster-id key"},
		{"ignoring an announcement", "badid._liqo._tcp.local.", `cluster-id=\"CL_Bad\": not a cluster ID`},
		{"ignoring an announcement", "huge._liqo._tcp.local.", "more than 1300"},
		{"ignoring an announcement", "binkey._liqo._tcp.local.", "not printable US-ASCII"},
	} {
		if !logs.has(line...) {
			t.Errorf("no log line with %q:\n%s", line, logs)
		}
	}
	if len(res.Warnings) != 4 {
		t.Errorf("warnings %q, want one per bad announcement", res.Warnings)
	}
}

// Bad options are refused before anything is opened.
func TestBadOptions(t *testing.T) {
	for _, c := range []struct {
		opts landiscovery.AnnounceOptions
		want string
	}{
		{landiscovery.AnnounceOptions{ClusterID: "CL", Host: "10.0.0.1", Port: 1}, "not a cluster ID"},
		{landiscovery.AnnounceOptions{ClusterID: "cl", Host: "10.0.0.1"}, "must be set"},
		{landiscovery.AnnounceOptions{ClusterID: "cl", Host: "10.0.0.1", Port: 1, Interface: "nosuchif0"}, `"nosuchif0"`},
		{landiscovery.AnnounceOptions{ClusterID: "cl", Host: "10.0.0.1", Port: 1, Shares: strings.Repeat("x", 300)}, "more than 255"},
	} {
		if _, err := landiscovery.NewAnnouncer(c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewAnnouncer(%+v): %v, want an error with %q", c.opts, err, c.want)
		}
	}
	for _, d := range []time.Duration{-time.Second, 2 * time.Minute} {
		if _, err := landiscovery.Browse(context.Background(), landiscovery.BrowseOptions{Timeout: d}); err == nil {
			t.Errorf("Browse with timeout %s: no error", d)
		}
	}
}
