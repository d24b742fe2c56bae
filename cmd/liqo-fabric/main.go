// Command liqo-fabric is the node agent of the network fabric (upstream: the liqo-fabric
// DaemonSet, hostNetwork with NET_ADMIN): it makes the node (or a gateway) hold the tunnel
// links, policy routes and nftables rules of gateway/fabric.
//
// In a cluster (the default) it runs gateway/fabric/nodeagent's reconciler for the node
// --node-name (NODE_NAME from the downward API): it follows the cluster's fabric objects
// (InternalNode, InternalFabric, GeneveTunnel, FirewallConfiguration, RouteConfiguration, Node),
// applies the node's side (and the gateway's side on the node that hosts a host-network
// gateway), writes the node's source address into its InternalNode's status, and on SIGTERM or
// SIGINT removes everything it made (--cleanup-on-exit, as upstream's agent removes its Geneve
// links on shutdown). Credentials: in-cluster, or --kubeconfig.
//
// With --config it reads what to apply from a JSON file instead (tests and hand-made set-ups):
// {"node": fabric.Node, "gateway": fabric.Gateway, "extra": fabric.Desired}, any of them,
// re-read and re-applied every --interval.
//
// At start it detects the encapsulation the kernel takes (Geneve as upstream, VXLAN on kernels
// without Geneve) and logs it; --encap forces one.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/peerkit/terraform-provider-liqo/gateway/fabric"
	"github.com/peerkit/terraform-provider-liqo/gateway/fabric/nodeagent"
	"github.com/peerkit/terraform-provider-liqo/internal/cli"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

func main() {
	cli.Exit("liqo-fabric", run())
}

// config is the --config file.
type config struct {
	// Node is the node's side of the fabric.
	Node *fabric.Node `json:"node,omitempty"`
	// Gateway is a gateway's side, for a gateway in this network namespace.
	Gateway *fabric.Gateway `json:"gateway,omitempty"`
	// Extra is added as it is.
	Extra fabric.Desired `json:"extra"`
}

// desired is what c asks for.
func (c config) desired() fabric.Desired {
	d := c.Extra
	for _, part := range []*fabric.Desired{nodeDesired(c.Node), gatewayDesired(c.Gateway)} {
		if part != nil {
			d.Tunnels = append(d.Tunnels, part.Tunnels...)
			d.Tables = append(d.Tables, part.Tables...)
			d.Firewalls = append(d.Firewalls, part.Firewalls...)
		}
	}
	return d
}

func nodeDesired(n *fabric.Node) *fabric.Desired {
	if n == nil {
		return nil
	}
	d := fabric.NodeDesired(*n)
	return &d
}

func gatewayDesired(g *fabric.Gateway) *fabric.Desired {
	if g == nil {
		return nil
	}
	d := fabric.GatewayDesired(*g)
	return &d
}

// readConfig reads and decodes the --config file, refusing unknown fields.
func readConfig(path string) (fabric.Desired, error) {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return fabric.Desired{}, fmt.Errorf("reading the fabric configuration: %w", err)
	}
	defer func() { _ = f.Close() }()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var c config
	if err := dec.Decode(&c); err != nil {
		return fabric.Desired{}, fmt.Errorf("decoding the fabric configuration %s: %w", path, err)
	}
	return c.desired(), nil
}

// flags are the command's options.
type flags struct {
	configPath, encap, nodeName, kubeconfig, liqoNamespace, apiNetns string
	port                                                             uint
	port16                                                           uint16
	interval, resync                                                 time.Duration
	cleanup                                                          bool
	verbosity                                                        int
}

func parseFlags() (flags, error) {
	var f flags
	// A flag set of its own: controller-runtime registers --kubeconfig on the global one.
	fs := flag.NewFlagSet("liqo-fabric", flag.ExitOnError)
	fs.StringVar(&f.configPath, "config", "", "file mode: JSON file of what to apply ({\"node\": ..., \"gateway\": ..., \"extra\": ...}) instead of the cluster's objects")
	fs.StringVar(&f.encap, "encap", "auto", "tunnel encapsulation: auto (Geneve if the kernel has it, else VXLAN), geneve or vxlan")
	fs.UintVar(&f.port, "geneve-port", fabric.DefaultPort, "UDP port of the tunnels")
	fs.StringVar(&f.nodeName, "node-name", os.Getenv("NODE_NAME"), "name of the node the agent runs on (required in a cluster; default: $NODE_NAME)")
	fs.StringVar(&f.nodeName, "nodename", os.Getenv("NODE_NAME"), "same as --node-name (deprecated)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster; empty: in-cluster credentials")
	fs.StringVar(&f.apiNetns, "api-netns", "", "process mode: network namespace (a path such as /proc/<pid>/ns/net) to reach the API server from, when the node's own cannot")
	fs.StringVar(&f.liqoNamespace, "namespace", consts.LiqoNamespace, "namespace Liqo is installed in (the gateways' RouteConfigurations)")
	fs.DurationVar(&f.interval, "interval", 10*time.Second, "file mode: how often to re-read the configuration and re-apply it")
	fs.DurationVar(&f.resync, "resync", nodeagent.DefaultResync, "cluster mode: how often to re-apply without a change of the objects")
	fs.BoolVar(&f.cleanup, "cleanup-on-exit", true, "remove every link, route, rule and nftables table of the fabric on SIGTERM or SIGINT")
	fs.IntVar(&f.verbosity, "v", 0, "log verbosity")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return f, fmt.Errorf("parsing the flags: %w", err)
	}
	if f.port == 0 || f.port > 65535 {
		return f, fmt.Errorf("--geneve-port %d: out of range (1-65535)", f.port)
	}
	f.port16 = uint16(f.port)
	if f.configPath == "" && f.nodeName == "" {
		return f, fmt.Errorf("--node-name (or NODE_NAME) is required in a cluster; or give --config for file mode")
	}
	if f.interval <= 0 || f.resync <= 0 {
		return f, fmt.Errorf("--interval %v and --resync %v must be positive", f.interval, f.resync)
	}
	return f, nil
}

func run() error {
	f, err := parseFlags()
	if err != nil {
		return err
	}
	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{LogTimestamp: true, Verbosity: f.verbosity}).
		WithValues("node", f.nodeName)
	dp := &fabric.Dataplane{Encap: fabric.Encap(f.encap), Port: f.port16, Log: log}
	if f.encap == "auto" {
		if dp.Encap, err = fabric.DetectEncap(log); err != nil {
			return fmt.Errorf("detecting the tunnel encapsulation: %w", err)
		}
	} else if dp.Encap != fabric.EncapGeneve && dp.Encap != fabric.EncapVXLAN {
		return fmt.Errorf("--encap %q: must be auto, %s or %s", f.encap, fabric.EncapGeneve, fabric.EncapVXLAN)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.configPath == "" {
		log.Info("starting", "encap", dp.Encap, "port", dp.Port, "mode", "cluster", "resync", f.resync.String())
		return runCluster(ctx, log, dp, f)
	}
	log.Info("starting", "encap", dp.Encap, "port", dp.Port, "config", f.configPath, "interval", f.interval.String())
	return loop(ctx, log, dp, f.configPath, f.interval, f.cleanup)
}

// loop applies the configuration every interval until ctx ends, then removes everything when
// cleanup is set. A failed Apply is logged and retried at the next tick.
func loop(ctx context.Context, log logr.Logger, dp *fabric.Dataplane, configPath string, interval time.Duration, cleanup bool) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		want, err := readConfig(configPath)
		if err == nil {
			_, err = dp.Apply(ctx, want)
		}
		if err != nil {
			log.Error(err, "applying the fabric failed; retrying", "in", interval.String())
		}
		select {
		case <-ctx.Done():
			if !cleanup {
				return nil
			}
			if _, err := dp.RemoveAll(context.Background()); err != nil {
				return fmt.Errorf("removing the fabric on exit: %w", err)
			}
			log.Info("fabric removed")
			return nil
		case <-tick.C:
		}
	}
}
