package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/peerkit/terraform-provider-liqo/controllers/negotiation"
	"github.com/peerkit/terraform-provider-liqo/internal/landiscovery"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// lanDiscoveryRetry is how long the announcer waits before trying again to open its sockets.
const lanDiscoveryRetry = 30 * time.Second

// lanDiscoveryOptions are the flags of LAN discovery.
type lanDiscoveryOptions struct {
	enabled bool
	iface   string
}

// bindFlags adds the flags of LAN discovery to fs.
func (l *lanDiscoveryOptions) bindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&l.enabled, "lan-discovery", false, "announce this cluster over multicast DNS (_liqo._tcp.local.: the host and port of "+
		"--api-server-url, the cluster ID, the version and what is shared) while this manager leads, for liqo_lan_discovery; "+
		"withdrawn when it stops")
	fs.StringVar(&l.iface, "lan-discovery-interface", "", "the network interface to announce on (default: the system's default multicast interface)")
}

// setupLANDiscovery adds, with --lan-discovery, a leader-only Runnable that announces the
// cluster until the manager stops, then withdraws it.
func setupLANDiscovery(mgr ctrl.Manager, o *options) error {
	if !o.lan.enabled {
		return nil
	}
	u, err := url.Parse(o.apiServerURL)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("--lan-discovery: the API server URL %q has no host to announce: set --api-server-url", o.apiServerURL)
	}
	port := uint64(443)
	if p := u.Port(); p != "" {
		if port, err = strconv.ParseUint(p, 10, 16); err != nil {
			return fmt.Errorf("--lan-discovery: the port of the API server URL %q: %w", o.apiServerURL, err)
		}
	}
	log := mgr.GetLogger().WithName("lan-discovery")
	opts := landiscovery.AnnounceOptions{ClusterID: string(o.identity.ClusterID), Host: u.Hostname(), Port: uint16(port),
		Version: version.Version, Shares: shares(o.share), Interface: o.lan.iface, Log: log}
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for {
			a, err := landiscovery.NewAnnouncer(opts)
			if err == nil {
				log.Info("announcing the cluster on the LAN", "host", opts.Host, "port", opts.Port, "interface", opts.Interface)
				return a.Start(ctx)
			}
			// Not fatal to the manager: the interface may come up later.
			log.Error(err, "LAN discovery: cannot announce yet; trying again", "in", lanDiscoveryRetry)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(lanDiscoveryRetry):
			}
		}
	}))
	if err != nil {
		return fmt.Errorf("adding the LAN discovery announcer to the manager: %w", err)
	}
	return nil
}

// shares is what the cluster shares, for the TXT key shares: the fixed amounts
// (cpu=8,memory=16Gi, sorted by name) or the percent of the nodes' allocatable resources.
func shares(p negotiation.Policy) string {
	if len(p.Fixed) == 0 {
		percent := p.Percent
		if percent == 0 {
			percent = 100
		}
		return strconv.FormatInt(percent, 10) + "%"
	}
	var out []string
	for name, q := range p.Fixed {
		out = append(out, string(name)+"="+q.String())
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
