package dnsdiscovery_test

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/peerkit/terraform-provider-liqo/internal/dnsdiscovery"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

const (
	domain  = "clusters.example.com"
	service = "_liqo._tcp.clusters.example.com"
)

// publish adds a complete instance: PTR, SRV and TXT.
func publish(s *testenv.DNSServer, name, host string, port uint16, txt ...string) {
	inst := name + "." + service
	s.AddPTR(service, inst)
	s.AddSRV(inst, 0, 0, port, host)
	s.AddTXT(inst, txt...)
}

func lookup(t *testing.T, s *testenv.DNSServer, timeout time.Duration) (*dnsdiscovery.Result, error) {
	t.Helper()
	return dnsdiscovery.Lookup(context.Background(), dnsdiscovery.Options{
		Domain: domain, Nameservers: []string{s.Addr}, Timeout: timeout,
	})
}

// wantErr fails unless err holds every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one with %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q\nlacks %q", err, p)
		}
	}
}

func TestLookupSeveralInstances(t *testing.T) {
	s := testenv.NewDNSServer(t)
	publish(s, "rome", "api.rome.example.com", 6443, "cluster-id=cl-rome", "pod-cidr=10.1.0.0/16")
	// Keys are case-insensitive and the first occurrence wins (RFC 6763 6.4); a value keeps
	// its '=', spaces and quotes; a bare key has the empty value; empty strings and strings
	// starting with '=' are ignored.
	publish(s, "Milan DC", "api.milan.example.com", 443, "", "=ignored", "Cluster-ID=cl-milan", "cluster-id=cl-other",
		`note=a "quoted" value = with equals`, "gpu", "zone=eu-south")
	// Several SRV records: lowest priority first, then highest weight, then host and port.
	turin := "turin." + service
	s.AddPTR(service, turin)
	s.AddSRV(turin, 20, 100, 6443, "backup.turin.example.com.")
	s.AddSRV(turin, 10, 5, 6443, "b.turin.example.com.")
	s.AddSRV(turin, 10, 50, 7443, "c.turin.example.com.")
	s.AddSRV(turin, 10, 5, 6443, "a.turin.example.com.")
	s.AddSRV(turin, 10, 5, 6443, "a.turin.example.com.") // a duplicate is kept once
	s.AddTXT(turin, "cluster-id=cl-turin")
	s.AddPTR(service, "ROME."+service) // the same instance in another case: listed once

	res, err := lookup(t, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []dnsdiscovery.Cluster{{
		Name: "Milan DC", ClusterID: "cl-milan",
		Endpoints: []dnsdiscovery.Endpoint{{Host: "api.milan.example.com", Port: 443}},
		TXT: map[string]string{"cluster-id": "cl-milan", "note": `a "quoted" value = with equals`, "gpu": "",
			"zone": "eu-south"},
	}, {
		Name: "rome", ClusterID: "cl-rome",
		Endpoints: []dnsdiscovery.Endpoint{{Host: "api.rome.example.com", Port: 6443}},
		TXT:       map[string]string{"cluster-id": "cl-rome", "pod-cidr": "10.1.0.0/16"},
	}, {
		Name: "turin", ClusterID: "cl-turin",
		Endpoints: []dnsdiscovery.Endpoint{
			{Host: "c.turin.example.com", Port: 7443, Priority: 10, Weight: 50},
			{Host: "a.turin.example.com", Port: 6443, Priority: 10, Weight: 5},
			{Host: "b.turin.example.com", Port: 6443, Priority: 10, Weight: 5},
			{Host: "backup.turin.example.com", Port: 6443, Priority: 20, Weight: 100},
		},
		TXT: map[string]string{"cluster-id": "cl-turin"},
	}}
	if !reflect.DeepEqual(res.Clusters, want) {
		t.Errorf("clusters:\n got %+v\nwant %+v", res.Clusters, want)
	}
	if res.ServiceName != service+"." || res.Nameserver != s.Addr || res.NotFound || len(res.Warnings) != 0 {
		t.Errorf("result: %+v", res)
	}
	if got := res.Clusters[2].Endpoints[0].URL(); got != "https://c.turin.example.com:7443" {
		t.Errorf("URL: %s", got)
	}
	// Every lookup gives the same order (Go's resolver would shuffle equal priorities).
	for range 5 {
		again, err := lookup(t, s, 0)
		if err != nil || !reflect.DeepEqual(again.Clusters, want) {
			t.Fatalf("a second lookup differs: %v %+v", err, again)
		}
	}
}

func TestLookupNothingPublished(t *testing.T) {
	s := testenv.NewDNSServer(t)
	res, err := lookup(t, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.NotFound || len(res.Clusters) != 0 || res.ServiceName != service+"." {
		t.Errorf("NXDOMAIN: %+v", res)
	}
	// The name exists with no PTR record (NODATA): empty too, not "not found".
	s.AddTXT(service, "hello")
	res, err = lookup(t, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.NotFound || len(res.Clusters) != 0 {
		t.Errorf("NODATA: %+v", res)
	}
}

func TestLookupBrokenInstances(t *testing.T) {
	inst := "bad." + service
	for _, tc := range []struct {
		name    string
		publish func(s *testenv.DNSServer)
		want    []string
	}{{
		"missing TXT", func(s *testenv.DNSServer) {
			s.AddPTR(service, inst)
			s.AddSRV(inst, 0, 0, 6443, "api.example.com")
		},
		[]string{`instance "bad" (bad._liqo._tcp.clusters.example.com.)`, "no TXT record", "has none for that name",
			`publish one with the cluster's ID, e.g. ` + "`bad._liqo._tcp.clusters.example.com. TXT \"cluster-id=<cluster ID>\"`"},
	}, {
		"missing SRV and TXT", func(s *testenv.DNSServer) { s.AddPTR(service, inst) },
		[]string{`instance "bad"`, "no SRV record", "says the name does not exist", "SRV 0 0 6443 api.example.com.",
			"or remove the PTR record that names the instance"},
	}, {
		"port 0", func(s *testenv.DNSServer) {
			s.AddPTR(service, inst)
			s.AddSRV(inst, 1, 2, 0, "api.example.com")
			s.AddTXT(inst, "cluster-id=cl-bad")
		},
		[]string{`instance "bad"`, "`bad._liqo._tcp.clusters.example.com. SRV 1 2 0 api.example.com.` has port 0",
			"set the port of the cluster's API server"},
	}, {
		"no cluster-id", func(s *testenv.DNSServer) {
			s.AddPTR(service, inst)
			s.AddSRV(inst, 0, 0, 6443, "api.example.com")
			s.AddTXT(inst, "pod-cidr=10.0.0.0/16", "clusterid=cl-bad")
		},
		[]string{`instance "bad"`, `its TXT record has no cluster-id key (its keys: "clusterid", "pod-cidr")`,
			`add "cluster-id=<cluster ID>" to it`},
	}, {
		"cluster-id not a DNS label", func(s *testenv.DNSServer) {
			s.AddPTR(service, inst)
			s.AddSRV(inst, 0, 0, 6443, "api.example.com")
			s.AddTXT(inst, "cluster-id=CL_Bad")
		},
		[]string{`instance "bad"`, `cluster-id="CL_Bad": not a cluster ID`, "liqo-clusterid-configmap"},
	}, {
		"two TXT records", func(s *testenv.DNSServer) {
			s.AddPTR(service, inst)
			s.AddSRV(inst, 0, 0, 6443, "api.example.com")
			s.AddTXT(inst, "cluster-id=cl-a")
			s.AddTXT(inst, "cluster-id=cl-b")
		},
		[]string{`instance "bad"`, "2 TXT records", "put all the keys in one TXT record"},
	}, {
		"binary value", func(s *testenv.DNSServer) {
			s.AddPTR(service, inst)
			s.AddSRV(inst, 0, 0, 6443, "api.example.com")
			s.AddTXT(inst, "cluster-id=cl-bad", "key=\xff\xfe")
		},
		[]string{`instance "bad"`, `the value of key "key" is not UTF-8 text`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := testenv.NewDNSServer(t)
			publish(s, "good", "api.good.example.com", 6443, "cluster-id=cl-good")
			tc.publish(s)
			_, err := lookup(t, s, 0)
			wantErr(t, err, append([]string{"clusters published under " + service + "."}, tc.want...)...)
			if err != nil && strings.Contains(err.Error(), `"good"`) {
				t.Errorf("the error blames the good instance: %v", err)
			}
		})
	}
	// Every broken instance is reported at once.
	s := testenv.NewDNSServer(t)
	s.AddPTR(service, "a."+service)
	s.AddPTR(service, "b."+service)
	_, err := lookup(t, s, 0)
	wantErr(t, err, `instance "a"`, `instance "b"`)
}

func TestLookupUnavailableAndDuplicates(t *testing.T) {
	s := testenv.NewDNSServer(t)
	publish(s, "gone", ".", 0, "cluster-id=cl-gone") // RFC 2782: not available here
	publish(s, "one", "a.example.com", 6443, "cluster-id=cl-same")
	publish(s, "two", "b.example.com", 6443, "cluster-id=cl-same")
	// A PTR target outside the service's name is named in full.
	s.AddPTR(service, "elsewhere.example.org")
	s.AddSRV("elsewhere.example.org", 0, 0, 6443, "c.example.org")
	s.AddTXT("elsewhere.example.org", "cluster-id=cl-elsewhere")
	res, err := lookup(t, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range res.Clusters {
		names = append(names, c.Name)
	}
	if want := []string{"elsewhere.example.org", "one", "two"}; !reflect.DeepEqual(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if len(res.Warnings) != 2 || !strings.Contains(res.Warnings[0], `instance "gone"`) ||
		!strings.Contains(res.Warnings[0], `target is ".", which says the service is not available there`) ||
		!strings.Contains(res.Warnings[1], `instances "one", "two" of `+service+`. all publish cluster-id=cl-same`) {
		t.Errorf("warnings: %q", res.Warnings)
	}
}

func TestLookupTruncatedOverTCP(t *testing.T) {
	s := testenv.NewDNSServer(t)
	const n = 60 // about 3 KB of PTR records: more than the 1232 bytes announced over UDP
	for i := range n {
		publish(s, fmt.Sprintf("cluster-with-a-longish-name-%02d", i), "api.example.com", 6443, fmt.Sprintf("cluster-id=cl-%02d", i))
	}
	res, err := lookup(t, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Clusters) != n || res.Clusters[n-1].ClusterID != fmt.Sprintf("cl-%02d", n-1) {
		t.Fatalf("found %d clusters, want %d", len(res.Clusters), n)
	}
	q := s.Queries()
	if !contains(q, "udp PTR "+service+".") || !contains(q, "tcp PTR "+service+".") {
		t.Errorf("the PTR query should go over UDP, then TCP: %q", q[:2])
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func TestLookupCNAME(t *testing.T) {
	s := testenv.NewDNSServer(t)
	s.AddCNAME(service, "_liqo._tcp.real.example.net")
	s.AddPTR("_liqo._tcp.real.example.net", "x._liqo._tcp.real.example.net")
	s.AddSRV("x._liqo._tcp.real.example.net", 0, 0, 6443, "api.x.example.net")
	s.AddTXT("x._liqo._tcp.real.example.net", "cluster-id=cl-x")
	res, err := lookup(t, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Clusters) != 1 || res.Clusters[0].ClusterID != "cl-x" || res.Clusters[0].Name != "x._liqo._tcp.real.example.net" {
		t.Errorf("through a CNAME: %+v", res.Clusters)
	}
}

func TestLookupNameserverProblems(t *testing.T) {
	t.Run("never answers", func(t *testing.T) {
		s := testenv.NewDNSServer(t)
		publish(s, "a", "api.example.com", 6443, "cluster-id=cl-a")
		s.SetSilent(true)
		start := time.Now()
		_, err := lookup(t, s, 1500*time.Millisecond)
		took := time.Since(start)
		wantErr(t, err, "asking for the PTR records of "+service+". (domain "+domain+")", "nameserver "+s.Addr,
			"no answer in time", "timeout 1.5s reached; raise timeout if the nameserver is slow")
		if took < 1500*time.Millisecond || took > 4*time.Second {
			t.Errorf("gave up after %s, want 1.5s", took)
		}
		// It sent the query again after a second (UDP loses packets), not more often.
		if q := s.Queries(); len(q) != 2 {
			t.Errorf("%d queries in 1.5s, want 2 (one a second): %q", len(q), q)
		}
		t.Logf("a silent nameserver: error after %s", took.Round(time.Millisecond))
	})
	t.Run("not listening", func(t *testing.T) {
		l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		addr := l.LocalAddr().String()
		_ = l.Close()
		start := time.Now()
		_, err = dnsdiscovery.Lookup(context.Background(), dnsdiscovery.Options{Domain: domain, Nameservers: []string{addr}})
		wantErr(t, err, "nameserver "+addr, "domain "+domain, "connection refused")
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("a refused nameserver took %s to report", took)
		}
	})
	t.Run("server failure", func(t *testing.T) {
		s := testenv.NewDNSServer(t)
		s.FailWith(dnsmessage.RCodeServerFailure)
		_, err := lookup(t, s, 0)
		wantErr(t, err, "nameserver "+s.Addr, "answered ServerFailure", "domain "+domain)
	})
	t.Run("next nameserver", func(t *testing.T) {
		down := testenv.NewDNSServer(t)
		down.SetSilent(true)
		up := testenv.NewDNSServer(t)
		publish(up, "a", "api.example.com", 6443, "cluster-id=cl-a")
		res, err := dnsdiscovery.Lookup(context.Background(), dnsdiscovery.Options{
			Domain: domain, Nameservers: []string{down.Addr, up.Addr}, Timeout: 3 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Clusters) != 1 || res.Nameserver != up.Addr {
			t.Errorf("with the first nameserver down: %+v", res)
		}
		// Once the second one has answered, the instance's records are asked of it first.
		if q := down.Queries(); len(q) == 0 || !strings.Contains(strings.Join(q, ","), "PTR") ||
			strings.Contains(strings.Join(q, ","), "SRV") {
			t.Errorf("the silent nameserver was asked %q; want the PTR query only", q)
		}
	})
}

func TestValidate(t *testing.T) {
	for _, ok := range []string{"example.com", "clusters.example.com.", "a", "_x.example.com", "Cl-1.Example.COM"} {
		if err := dnsdiscovery.ValidateDomain(ok); err != nil {
			t.Errorf("domain %q: %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		"":                                "it is empty",
		".":                               "it is empty",
		"a..b":                            "empty label",
		"-a.example.com":                  `label "-a"`,
		"a b.example.com":                 `label "a b"`,
		"https://example.com":             `label "https://example"`,
		strings.Repeat("x", 64) + ".com":  "more than 63",
		strings.Repeat("x.", 127) + "com": "more than 253",
	} {
		err := dnsdiscovery.ValidateDomain(bad)
		wantErr(t, err, "is not a DNS domain name such as clusters.example.com", why)
	}
	for _, ok := range []string{"_liqo._tcp", "_liqo_auth._tcp", "_x._udp"} {
		if err := dnsdiscovery.ValidateService(ok); err != nil {
			t.Errorf("service %q: %v", ok, err)
		}
	}
	for _, bad := range []string{"liqo._tcp", "_liqo", "_liqo._sctp", "_._tcp", "_liqo._tcp.example.com"} {
		wantErr(t, dnsdiscovery.ValidateService(bad), "is not a DNS-SD service type", "e.g. _liqo._tcp")
	}
	for _, ok := range []string{"10.0.0.53:53", "[fd00::53]:5353", "ns1.example.com:53", "[fe80::1%eth0]:53"} {
		if err := dnsdiscovery.ValidateNameserver(ok); err != nil {
			t.Errorf("nameserver %q: %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		"10.0.0.53":       "missing port",
		":53":             "the host is empty",
		"10.0.0.53:0":     `port "0"`,
		"10.0.0.53:70000": `port "70000"`,
		"10.0.0.53:dns":   `port "dns"`,
		"fd00::53:53":     "too many colons",
		"a b:53":          "neither an IP address nor a DNS name",
	} {
		wantErr(t, dnsdiscovery.ValidateNameserver(bad), "is not a nameserver address host:port", why)
	}
	// Lookup checks its options too.
	_, err := dnsdiscovery.Lookup(context.Background(), dnsdiscovery.Options{Domain: "a..b", Nameservers: []string{"127.0.0.1:53"}})
	wantErr(t, err, "empty label")
	_, err = dnsdiscovery.Lookup(context.Background(), dnsdiscovery.Options{Domain: "a", Nameservers: []string{"x"}})
	wantErr(t, err, "missing port")
}
