package sandbox

// Further pod CIDRs: a sandbox cluster may be given pod CIDRs besides its own (upstream Liqo
// v1.2's podCIDRs), to try a peer with several. Its controller manager then records each (one
// Network each), and where networking runs its stand-in pod also holds the .10 address of each,
// behind the gateway host, as a pod of that range would. The clusters' KWOK nodes keep their
// ranges of the cluster's own pod CIDR. None by default.

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// ExtraPodCIDRFlag is the name of the sandbox command's flag (and of the supervisor's) that gives
// a cluster a further pod CIDR, as cluster=cidr; ExtraPodCIDRArgs writes it back.
const ExtraPodCIDRFlag = "extra-pod-cidr"

// ParseExtraPodCIDR reads one use of ExtraPodCIDRFlag, cluster=cidr (e.g.
// provider=10.70.0.0/16), into into.
func ParseExtraPodCIDR(into map[string][]string, v string) error {
	cluster, cidr, ok := strings.Cut(v, "=")
	if !ok || cluster == "" || cidr == "" {
		return fmt.Errorf("-%s %q: want cluster=cidr, e.g. provider=10.70.0.0/16", ExtraPodCIDRFlag, v)
	}
	into[cluster] = append(into[cluster], cidr)
	return nil
}

// ExtraPodCIDRArgs are the flags that give the supervisor the sandbox's further pod CIDRs.
func (s *Sandbox) ExtraPodCIDRArgs() []string {
	return perClusterArgs(ExtraPodCIDRFlag, s.ExtraPodCIDRs)
}

// perClusterArgs writes a per-cluster flag's values back as flags (-flag cluster=value), the
// clusters in name order, each cluster's values in theirs.
func perClusterArgs(flag string, values map[string][]string) []string {
	clusters := make([]string, 0, len(values))
	for c := range values {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	var args []string
	for _, c := range clusters {
		for _, v := range values[c] {
			args = append(args, "-"+flag, c+"="+v)
		}
	}
	return args
}

// ValidateExtraPodCIDRs checks the further pod CIDRs: each for a running cluster, an IPv4
// network CIDR of at least 8 addresses (the stand-in pod takes .10), overlapping neither the
// cluster's own pod CIDR nor another of its further ones; only with KWOK nodes (real nodes get
// their pod CIDR from the chart).
func (s *Sandbox) ValidateExtraPodCIDRs(nodes string) error {
	if len(s.ExtraPodCIDRs) == 0 {
		return nil
	}
	if nodes == NodesReal {
		return fmt.Errorf("-%s works with KWOK nodes only (-nodes %s), not real ones", ExtraPodCIDRFlag, NodesKWOK)
	}
	for cluster, cidrs := range s.ExtraPodCIDRs {
		if !slices.Contains(s.names(), cluster) {
			return fmt.Errorf("-%s %s=...: no such cluster in this sandbox (%s)", ExtraPodCIDRFlag, cluster, strings.Join(s.names(), ", "))
		}
		o, err := clusterOptions(cluster)
		if err != nil {
			return err
		}
		taken := []netip.Prefix{netip.MustParsePrefix(o.PodCIDR)}
		for _, c := range cidrs {
			p, err := netip.ParsePrefix(c)
			if err != nil || !p.Addr().Is4() || p.Masked() != p || p.Bits() > 28 {
				return fmt.Errorf("-%s %s=%s: not an IPv4 network CIDR of /28 or larger, e.g. 10.70.0.0/16", ExtraPodCIDRFlag, cluster, c)
			}
			if i := slices.IndexFunc(taken, p.Overlaps); i >= 0 {
				return fmt.Errorf("-%s %s=%s overlaps the cluster's pod CIDR %s: give one that does not", ExtraPodCIDRFlag, cluster, c, taken[i])
			}
			taken = append(taken, p)
		}
	}
	return nil
}

// StandInAddress is the address the stand-in pod of a cluster holds in its pod CIDR cidr (its
// own, PodAddress, or a further one): the .10 address of cidr. Empty when cidr is not an IPv4
// network.
func StandInAddress(cidr string) string {
	pod, _, _, err := standInAddrs(cidr)
	if err != nil {
		return ""
	}
	return pod
}

// standInAddrs returns the stand-in pod's address in cidr and its gateway (the gateway host's
// address on the pod link), .10 and .1 of cidr, and cidr's prefix length: the gateway host
// reaches the whole of cidr on that link.
func standInAddrs(cidr string) (pod, gw string, bits int, err error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil || n.IP.To4() == nil {
		return "", "", 0, fmt.Errorf("pod CIDR %q is not an IPv4 network", cidr)
	}
	b := n.IP.To4()
	bits, _ = n.Mask.Size()
	return net.IPv4(b[0], b[1], b[2], b[3]+10).String(), net.IPv4(b[0], b[1], b[2], b[3]+1).String(), bits, nil
}
