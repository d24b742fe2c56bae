// Command liqo-fabric is the node agent of the network fabric (upstream: the liqo-fabric
// DaemonSet, hostNetwork with NET_ADMIN): it makes the node (or a gateway) hold the tunnel
// links, policy routes and nftables rules of gateway/fabric.
//
// Until the fabric's objects are reconciled it reads what to apply from a JSON file (--config):
// {"node": fabric.Node, "gateway": fabric.Gateway, "extra": fabric.Desired}, any of them. It
// re-reads and re-applies the file every --interval (repairing what someone else changed), and
// on SIGTERM or SIGINT removes everything it made (--cleanup-on-exit, as upstream's agent
// removes its Geneve links on shutdown).
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
	"github.com/peerkit/terraform-provider-liqo/internal/cli"
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

func run() error {
	var configPath, encap, nodeName string
	var port uint
	var interval time.Duration
	var cleanup bool
	var verbosity int
	flag.StringVar(&configPath, "config", "", "JSON file of what to apply: {\"node\": ..., \"gateway\": ..., \"extra\": ...} (required)")
	flag.StringVar(&encap, "encap", "auto", "tunnel encapsulation: auto (Geneve if the kernel has it, else VXLAN), geneve or vxlan")
	flag.UintVar(&port, "geneve-port", fabric.DefaultPort, "UDP port of the tunnels")
	flag.StringVar(&nodeName, "nodename", os.Getenv("NODE_NAME"), "name of the node, for the logs")
	flag.DurationVar(&interval, "interval", 10*time.Second, "how often to re-read the configuration and re-apply it")
	flag.BoolVar(&cleanup, "cleanup-on-exit", true, "remove every link, route, rule and nftables table of the fabric on SIGTERM or SIGINT")
	flag.IntVar(&verbosity, "v", 0, "log verbosity")
	flag.Parse()
	if configPath == "" {
		return fmt.Errorf("--config is required")
	}
	if port == 0 || port > 65535 {
		return fmt.Errorf("--geneve-port %d: out of range (1-65535)", port)
	}
	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(os.Stderr, obj) }, funcr.Options{LogTimestamp: true, Verbosity: verbosity}).
		WithValues("node", nodeName)
	dp := &fabric.Dataplane{Encap: fabric.Encap(encap), Port: uint16(port), Log: log}
	if encap == "auto" {
		var err error
		if dp.Encap, err = fabric.DetectEncap(log); err != nil {
			return fmt.Errorf("detecting the tunnel encapsulation: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("starting", "encap", dp.Encap, "port", dp.Port, "config", configPath, "interval", interval.String())
	return loop(ctx, log, dp, configPath, interval, cleanup)
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
