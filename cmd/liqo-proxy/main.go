// Command liqo-proxy is a cluster's API-server proxy for the in-band control plane (upstream
// Liqo v1.2's liqo-proxy): an HTTP CONNECT proxy (internal/apiproxy) that reaches only the
// targets given with --allow, by default the cluster's own API server as its pods see it
// ($KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT). The chart runs it behind the Service
// liqo-proxy; peers reach it through the WireGuard tunnel. It needs no Kubernetes API rights:
// it never talks to the API server, it only carries bytes to it.
//
// It serves /healthz and /readyz on --health-probe-bind-address and stops on SIGTERM, ending
// the tunnels it carries.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/peerkit/terraform-provider-liqo/internal/apiproxy"
	"github.com/peerkit/terraform-provider-liqo/internal/cli"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr, nil)
	stop()
	cli.Exit("liqo-proxy", err)
}

// options are the command's flags.
type options struct {
	listen      string
	probeAddr   string
	allow       []string
	inCluster   bool
	dialTimeout time.Duration
	zap         zap.Options
}

// allowFlag collects the repeated --allow.
type allowFlag struct{ targets *[]string }

func (a allowFlag) String() string {
	if a.targets == nil {
		return ""
	}
	return strings.Join(*a.targets, ",")
}

func (a allowFlag) Set(v string) error {
	*a.targets = append(*a.targets, v)
	return nil
}

// inClusterAPIServer is the API server as the pod sees it, from the environment the kubelet
// gives every container; false when either variable is unset.
func inClusterAPIServer(getenv func(string) string) (string, bool) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return "", false
	}
	return net.JoinHostPort(host, port), true
}

// parse reads args: the targets are the in-cluster API server (from getenv; unless
// --allow-in-cluster-api-server=false) and every --allow; without any it fails saying so.
func parse(args []string, out io.Writer, getenv func(string) string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("liqo-proxy", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.listen, "listen", fmt.Sprintf(":%d", consts.APIServerProxyPort), "address the CONNECT proxy listens on, host:port")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints (0 disables them)")
	fs.Var(allowFlag{&o.allow}, "allow", "a target CONNECT may reach, host:port as clients write it (the host is never resolved); repeatable")
	fs.BoolVar(&o.inCluster, "allow-in-cluster-api-server", true, "also allow the in-cluster API server, "+
		"$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, when those are set (in a pod)")
	fs.DurationVar(&o.dialTimeout, "dial-timeout", apiproxy.DefaultDialTimeout, "how long reaching a target may take")
	o.zap.BindFlags(fs)
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	if o.inCluster {
		if target, ok := inClusterAPIServer(getenv); ok && !slices.Contains(o.allow, target) {
			o.allow = append([]string{target}, o.allow...)
		}
	}
	if len(o.allow) == 0 {
		return nil, errors.New("no target to allow: no --allow, and the in-cluster API server is unknown ($KUBERNETES_SERVICE_HOST " +
			"and $KUBERNETES_SERVICE_PORT are unset: not in a pod, or --allow-in-cluster-api-server=false): " +
			"give the API server's host:port with --allow")
	}
	return o, nil
}

// listening are the addresses run serves on, once it does (the health address is nil when
// disabled).
type listening struct {
	proxy, health net.Addr
}

// run parses args and serves the proxy (and the health endpoints) until ctx ends; started,
// when not nil, gets the addresses once both listen.
func run(ctx context.Context, args []string, out io.Writer, started func(listening)) error {
	o, err := parse(args, out, os.Getenv)
	if err != nil {
		return err
	}
	log := zap.New(zap.UseFlagOptions(&o.zap), zap.WriteTo(out)).WithName("liqo-proxy")
	p, err := apiproxy.New(apiproxy.Options{Allowed: o.allow, DialTimeout: o.dialTimeout, Log: log})
	if err != nil {
		return fmt.Errorf("--allow: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	var addrs listening
	addrs.proxy = ln.Addr()
	var health *http.Server
	if o.probeAddr != "0" {
		hln, err := lc.Listen(ctx, "tcp", o.probeAddr)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("--health-probe-bind-address %s: %w", o.probeAddr, err)
		}
		addrs.health = hln.Addr()
		health = healthServer()
		go func() {
			if err := health.Serve(hln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error(err, "serving the health endpoints")
			}
		}()
	}
	log.Info("serving", "listen", addrs.proxy.String(), "allowed", o.allow, "healthProbes", o.probeAddr)
	if started != nil {
		started(addrs)
	}
	err = apiproxy.Serve(ctx, ln, p)
	if health != nil {
		_ = health.Close()
	}
	if err != nil {
		return fmt.Errorf("serving: %w", err)
	}
	log.Info("stopped")
	return nil
}

// healthServer answers /healthz and /readyz with 200 while the proxy serves: it has nothing
// else to wait for (it listens before the health endpoints do).
func healthServer() *http.Server {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/readyz", ok)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}
