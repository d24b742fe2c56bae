// Package dnsdiscovery finds the clusters published in DNS under a domain, as DNS-based
// service discovery (RFC 6763) publishes services: PTR records at <service>.<domain> name the
// instances <instance>.<service>.<domain>, each with an SRV record (host and port of the
// cluster's API server) and a TXT record of key=value strings, cluster-id=<ID> among them.
//
// It asks the nameservers itself (golang.org/x/net/dns/dnsmessage over UDP, TCP for truncated
// answers) rather than through net.Resolver, which cannot ask for the PTR records of a name
// that is not a reverse address, shuffles SRV records of equal priority at random, and joins
// the strings of a TXT record into one.
package dnsdiscovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

const (
	// DefaultService is the DNS-SD service the clusters are published as.
	DefaultService = consts.DiscoveryService
	// DefaultTimeout bounds a whole discovery.
	DefaultTimeout = 5 * time.Second
	// ClusterIDKey is the TXT key holding an instance's cluster ID.
	ClusterIDKey = consts.DiscoveryTXTClusterID
	// parallel is how many instances are looked up at once.
	parallel = 8
)

// Options says what to look up and where.
type Options struct {
	// Domain is the DNS domain the clusters are published under, e.g. clusters.example.com.
	Domain string
	// Service is the DNS-SD service type; empty: DefaultService.
	Service string
	// Nameservers are asked in turn (host:port); none: those of /etc/resolv.conf.
	Nameservers []string
	// Timeout bounds the whole discovery; zero: DefaultTimeout.
	Timeout time.Duration
}

// Cluster is one instance found: a cluster's API server and its TXT keys.
type Cluster struct {
	// Name is the instance's name: the first label of its PTR target (or the whole target,
	// without its trailing dot, when that is not under the service's name).
	Name string
	// ClusterID is the value of the TXT key cluster-id.
	ClusterID string
	// Endpoints are the instance's SRV records, best first: lowest priority, then highest
	// weight, then host and port.
	Endpoints []Endpoint
	// TXT holds the TXT record's keys (in lower case) and values, cluster-id included; a key
	// without '=' has the empty value.
	TXT map[string]string
}

// Endpoint is one SRV record of an instance.
type Endpoint struct {
	// Host is the SRV record's target, without its trailing dot.
	Host string
	// Port is the SRV record's port.
	Port uint16
	// Priority is the SRV record's priority: lower is preferred.
	Priority uint16
	// Weight is the SRV record's weight: among records of one priority, higher is preferred.
	Weight uint16
}

// URL is https://host:port.
func (e Endpoint) URL() string {
	return "https://" + net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
}

// Result is what a discovery found.
type Result struct {
	// ServiceName is the name whose PTR records were asked for: <service>.<domain>.
	ServiceName string
	// Nameserver is the nameserver that answered the PTR query.
	Nameserver string
	// NotFound: the nameserver said ServiceName does not exist (NXDOMAIN).
	NotFound bool
	// Clusters are the instances found, sorted by name.
	Clusters []Cluster
	// Warnings are about instances left out (their SRV record says they are not available)
	// and cluster IDs published by several instances.
	Warnings []string
}

// Lookup finds the clusters published under opts.Domain. No PTR record there is no error:
// an empty Result (NotFound says whether the name exists at all). An instance with a
// record missing or wrong is an error naming it, the record and the fix; so is a nameserver
// that does not answer.
func Lookup(ctx context.Context, opts Options) (*Result, error) {
	if err := ValidateDomain(opts.Domain); err != nil {
		return nil, err
	}
	if opts.Service == "" {
		opts.Service = DefaultService
	}
	if err := ValidateService(opts.Service); err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	servers := opts.Nameservers
	if len(servers) == 0 {
		var err error
		if servers, err = SystemNameservers(ResolvConf); err != nil {
			return nil, err
		}
	}
	for _, s := range servers {
		if err := ValidateNameserver(s); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, opts.Timeout,
		fmt.Errorf("timeout %s reached; raise timeout if the nameserver is slow", opts.Timeout))
	defer cancel()

	c := &client{nameservers: servers}
	service := opts.Service + "." + strings.TrimSuffix(opts.Domain, ".") + "."
	res := &Result{ServiceName: service}
	ptr, err := c.query(ctx, service, dnsmessage.TypePTR)
	if err != nil {
		host, port, _ := net.SplitHostPort(servers[0])
		return nil, fmt.Errorf("asking for the PTR records of %s (domain %s): %w; check that the nameserver "+
			"answers (`dig -p %s @%s PTR %s`), or set another", service, opts.Domain, err, port, host, service)
	}
	res.Nameserver, res.NotFound = ptr.server, ptr.notFound

	instances := instanceNames(service, ptr.records)
	found := make([]*Cluster, len(instances))
	errs := make([]error, len(instances))
	warns := make([]string, len(instances))
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for i, inst := range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			found[i], warns[i], errs[i] = lookupInstance(ctx, c, inst)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("clusters published under %s: %w", service, err)
	}
	byID := map[string][]string{}
	for i, cl := range found {
		if warns[i] != "" {
			res.Warnings = append(res.Warnings, warns[i])
		}
		if cl != nil {
			res.Clusters = append(res.Clusters, *cl)
			byID[cl.ClusterID] = append(byID[cl.ClusterID], cl.Name)
		}
	}
	for _, cl := range res.Clusters {
		if names := byID[cl.ClusterID]; len(names) > 1 && names[0] == cl.Name {
			res.Warnings = append(res.Warnings, fmt.Sprintf("instances %s of %s all publish cluster-id=%s: "+
				"one cluster published twice, or a copied TXT record", quoteAll(names), service, cl.ClusterID))
		}
	}
	return res, nil
}

// instance is an instance named by a PTR record.
type instance struct {
	name string // its name, as Cluster.Name
	fqdn string // the PTR record's target, with its trailing dot
}

// instanceNames returns the instances the PTR records name, sorted by name, without
// duplicates (names compared case-insensitively, as DNS does).
func instanceNames(service string, records []dnsmessage.Resource) []instance {
	var out []instance
	seen := map[string]bool{}
	suffix := "." + strings.ToLower(service)
	for _, r := range records {
		ptr, ok := r.Body.(*dnsmessage.PTRResource)
		if !ok {
			continue
		}
		target := ptr.PTR.String()
		lower := strings.ToLower(target)
		if seen[lower] {
			continue
		}
		seen[lower] = true
		name := strings.TrimSuffix(target, ".")
		if strings.HasSuffix(lower, suffix) && !strings.Contains(target[:len(target)-len(suffix)], ".") {
			name = target[:len(target)-len(suffix)]
		}
		out = append(out, instance{name: name, fqdn: target})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// lookupInstance reads an instance's SRV and TXT records. An instance whose every SRV record
// has the target "." (RFC 2782: the service is not available there) is left out with a warning.
func lookupInstance(ctx context.Context, c *client, inst instance) (*Cluster, string, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("instance %q (%s): %s", inst.name, inst.fqdn, fmt.Sprintf(format, args...))
	}
	srv, err := c.query(ctx, inst.fqdn, dnsmessage.TypeSRV)
	if err != nil {
		return nil, "", fail("asking for its SRV record: %v", err)
	}
	if len(srv.records) == 0 {
		return nil, "", fail("no SRV record (%s): publish one with the port and host of the cluster's API server, "+
			"e.g. `%s SRV 0 0 6443 api.example.com.`, or remove the PTR record that names the instance",
			absence(srv), inst.fqdn)
	}
	cl := &Cluster{Name: inst.name}
	unavailable := 0
	for _, r := range srv.records {
		s, ok := r.Body.(*dnsmessage.SRVResource)
		if !ok {
			continue
		}
		if s.Target.String() == "." {
			unavailable++
			continue
		}
		if s.Port == 0 {
			return nil, "", fail("its SRV record `%s SRV %d %d 0 %s` has port 0: set the port of the cluster's "+
				"API server (e.g. 6443)", inst.fqdn, s.Priority, s.Weight, s.Target.String())
		}
		ep := Endpoint{Host: strings.TrimSuffix(s.Target.String(), "."), Port: s.Port, Priority: s.Priority, Weight: s.Weight}
		if !slices.Contains(cl.Endpoints, ep) {
			cl.Endpoints = append(cl.Endpoints, ep)
		}
	}
	if len(cl.Endpoints) == 0 && unavailable > 0 {
		return nil, fmt.Sprintf("instance %q (%s) left out: its SRV record's target is \".\", which says the "+
			"service is not available there (RFC 2782)", inst.name, inst.fqdn), nil
	}
	sortEndpoints(cl.Endpoints)

	txt, err := c.query(ctx, inst.fqdn, dnsmessage.TypeTXT)
	if err != nil {
		return nil, "", fail("asking for its TXT record: %v", err)
	}
	example := fmt.Sprintf("`%s TXT \"%s=<cluster ID>\"`", inst.fqdn, ClusterIDKey)
	switch len(txt.records) {
	case 0:
		return nil, "", fail("no TXT record (%s): publish one with the cluster's ID, e.g. %s", absence(txt), example)
	case 1:
	default:
		return nil, "", fail("%d TXT records, where DNS-SD (RFC 6763) has one: put all the keys in one TXT record",
			len(txt.records))
	}
	body, _ := txt.records[0].Body.(*dnsmessage.TXTResource)
	if body == nil {
		return nil, "", fail("its TXT record does not parse")
	}
	if cl.TXT, err = ParseTXT(body.TXT); err != nil {
		return nil, "", fail("its TXT record: %v", err)
	}
	id, ok := cl.TXT[ClusterIDKey]
	if !ok {
		return nil, "", fail("its TXT record has no %s key (its keys: %s): add \"%s=<cluster ID>\" to it, e.g. %s",
			ClusterIDKey, keyList(cl.TXT), ClusterIDKey, example)
	}
	if err := ValidateClusterID(id); err != nil {
		return nil, "", fail("its TXT record has %s=%q: %v", ClusterIDKey, id, err)
	}
	cl.ClusterID = id
	return cl, "", nil
}

// absence says how a nameserver said a record is not there.
func absence(a *answer) string {
	if a.notFound {
		return fmt.Sprintf("nameserver %s says the name does not exist", a.server)
	}
	return fmt.Sprintf("nameserver %s has none for that name", a.server)
}

// sortEndpoints orders SRV records as a client should try them (RFC 2782), made deterministic
// so that plans stay quiet: lowest priority first; among equal priorities, highest weight
// first (instead of RFC 2782's weighted random pick); then by host and port.
func sortEndpoints(eps []Endpoint) {
	sort.Slice(eps, func(i, j int) bool {
		a, b := eps[i], eps[j]
		switch {
		case a.Priority != b.Priority:
			return a.Priority < b.Priority
		case a.Weight != b.Weight:
			return a.Weight > b.Weight
		case a.Host != b.Host:
			return a.Host < b.Host
		default:
			return a.Port < b.Port
		}
	})
}

// keyList is a TXT record's keys, sorted and quoted, or "none".
func keyList(m map[string]string) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return quoteAll(keys)
}

// quoteAll quotes and joins names: "a", "b".
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// clusterIDPattern is a DNS-1123 label, the form of a Liqo cluster ID.
var clusterIDPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateClusterID checks a cluster ID as published in a TXT record: a DNS label.
func ValidateClusterID(id string) error {
	if !clusterIDPattern.MatchString(id) || len(id) > 63 {
		return errors.New("not a cluster ID (a DNS label: lower-case letters, digits and '-', starting and " +
			"ending with a letter or digit, at most 63 characters, e.g. cl-provider): publish the ID the " +
			"cluster's liqo-clusterid-configmap holds")
	}
	return nil
}

// domainLabel is one label of a domain name: letters, digits, '-' and '_', not starting or
// ending with '-'.
var domainLabel = regexp.MustCompile(`^[A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?$`)

// ValidateDomain checks a DNS domain name such as clusters.example.com (a trailing dot is
// allowed): labels of letters, digits, '-' and '_' (not starting or ending with '-'), each of
// 1 to 63 characters, 253 in all.
func ValidateDomain(domain string) error {
	name := strings.TrimSuffix(domain, ".")
	bad := func(why string) error {
		return fmt.Errorf("%q is not a DNS domain name such as clusters.example.com: %s", domain, why)
	}
	switch {
	case name == "":
		return bad("it is empty")
	case len(name) > 253:
		return bad(fmt.Sprintf("it has %d characters, more than 253", len(name)))
	}
	for _, l := range strings.Split(name, ".") {
		switch {
		case l == "":
			return bad("it has an empty label (two dots in a row, or a leading dot)")
		case len(l) > 63:
			return bad(fmt.Sprintf("label %q has %d characters, more than 63", l, len(l)))
		case !domainLabel.MatchString(l):
			return bad(fmt.Sprintf("label %q has characters other than letters, digits, '-' and '_', or starts or ends with '-'", l))
		}
	}
	return nil
}

// servicePattern is a DNS-SD service type: _<name>._tcp or _<name>._udp.
var servicePattern = regexp.MustCompile(`^_[A-Za-z0-9]([-A-Za-z0-9_]{0,61}[A-Za-z0-9])?\._(tcp|udp)$`)

// ValidateService checks a DNS-SD service type such as _liqo._tcp.
func ValidateService(service string) error {
	if !servicePattern.MatchString(service) {
		return fmt.Errorf("%q is not a DNS-SD service type: it must be _<name>._tcp or _<name>._udp, the name of "+
			"letters, digits, '-' and '_' (e.g. %s)", service, DefaultService)
	}
	return nil
}

// ValidateNameserver checks a nameserver's address: host:port, the host an IP address or a
// DNS name, e.g. 10.0.0.53:53 or [fd00::53]:53.
func ValidateNameserver(addr string) error {
	bad := func(why string) error {
		return fmt.Errorf("%q is not a nameserver address host:port such as 10.0.0.53:53 or [fd00::53]:53: %s", addr, why)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		why := err.Error()
		var ae *net.AddrError
		if errors.As(err, &ae) {
			why = ae.Err
		}
		return bad(why)
	}
	if host == "" {
		return bad("the host is empty")
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return bad(fmt.Sprintf("port %q is not a number from 1 to 65535", port))
	}
	if net.ParseIP(strings.SplitN(host, "%", 2)[0]) == nil {
		if err := ValidateDomain(host); err != nil {
			return bad("the host is neither an IP address nor a DNS name")
		}
	}
	return nil
}
