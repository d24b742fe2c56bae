// Command liqo-gateway runs one end (server or client) of a peering's WireGuard tunnel. It
// follows the GatewayServer or GatewayClient, the key Secret, the peer's PublicKey and the
// Configuration in a tenant namespace, and the ipam.liqo.io IPs of the Liqo namespace (the local
// addresses it exposes to the peer under the external CIDR's), and writes the Connection.
//
// In a cluster it runs in the gateway pod (NET_ADMIN, /dev/net/tun) with in-cluster credentials.
// In process mode (tests, the sandbox) it runs as a local process, typically under
// `ip netns exec`, pointed at a cluster with --kubeconfig.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/peerkit/terraform-provider-liqo/gateway/agent"
	"github.com/peerkit/terraform-provider-liqo/internal/cli"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
)

func main() {
	cli.Exit("liqo-gateway", run())
}

func run() error {
	var opts agent.Options
	var mode, kubeconfig, apiNetns string
	var verbosity int
	flag.StringVar(&mode, "mode", "", "tunnel end: server or client (required)")
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to follow; empty: in-cluster credentials")
	flag.StringVar(&apiNetns, "api-netns", "", "process mode: network namespace (a path such as /proc/<pid>/ns/net) to reach the API server from, when it is not reachable from the gateway's own")
	flag.StringVar(&opts.Namespace, "namespace", "", "tenant namespace holding the peering's objects (required)")
	flag.StringVar(&opts.LiqoNamespace, "liqo-namespace", consts.LiqoNamespace, "namespace Liqo is installed in, whose ipam.liqo.io IPs the gateway exposes to the peer under their external CIDR address")
	flag.StringVar(&opts.GatewayName, "gateway", "", "name of the GatewayServer (server) or GatewayClient (client) (required)")
	flag.StringVar(&opts.SecretName, "secret", "", "name of the key Secret; empty: the one the gateway object names")
	flag.StringVar(&opts.PublicKeyName, "public-key", "", "name of the peer's PublicKey; empty: the only one in the namespace")
	flag.StringVar(&opts.ConfigurationName, "configuration", "", "name of the Configuration; empty: the only one in the namespace")
	flag.StringVar(&opts.ConnectionName, "connection", "", "name of the Connection to write; empty: the gateway's name")
	flag.StringVar(&opts.Interface, "interface", "", "tunnel interface name (at most 15 characters, unique on the host); empty: derived from namespace and gateway")
	flag.StringVar(&opts.TunnelCIDR, "tunnel-cidr", agent.DefaultTunnelCIDR, "network of the two tunnel addresses (server: first host, client: second)")
	flag.IntVar(&opts.RouteTable, "route-table", 0, "routing table and fwmark that gateways before the stateless remap used (their rule is removed at start); 0: derived from the interface name")
	flag.DurationVar(&opts.ProbeInterval, "probe-interval", 0, "how often to probe the tunnel; 0: 500ms")
	flag.DurationVar(&opts.Keepalive, "keepalive", 0, "WireGuard persistent keepalive; 0: 10s")
	flag.IntVar(&verbosity, "v", 0, "log verbosity")
	flag.Parse()
	opts.Mode = agent.Mode(mode)

	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{LogTimestamp: true, Verbosity: verbosity})
	cfg, err := cli.RESTConfig(kubeconfig)
	if err != nil {
		return fmt.Errorf("loading cluster credentials: %w", err)
	}
	if apiNetns != "" {
		if cfg.Dial, err = netns.Dialer(apiNetns); err != nil {
			return err
		}
	}
	a, err := agent.New(cfg, opts, log)
	if err != nil {
		return fmt.Errorf("preparing the gateway: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("starting", "mode", mode, "namespace", opts.Namespace, "gateway", opts.GatewayName, "interface", a.Interface())
	return runAgent(ctx, log, a)
}

func runAgent(ctx context.Context, log logr.Logger, a *agent.Agent) error {
	if err := a.Run(ctx); err != nil {
		log.Error(err, "gateway failed")
		return fmt.Errorf("running the gateway: %w", err)
	}
	return nil
}
