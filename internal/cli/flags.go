package cli

import (
	"flag"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// This package is imported by every command, the gateway's too: it must not import
// controller-runtime's root package or pkg/client/config, whose init defines a global
// --kubeconfig flag that the gateway's own flag would then redefine (a panic at start).

// ManagerFlags are the flags of every command that runs a controller-runtime manager: the
// cluster it works in, its metrics and health endpoints, leader election and logging.
type ManagerFlags struct {
	// Kubeconfig is --kubeconfig: the cluster's credentials; empty: in-cluster (RESTConfig).
	Kubeconfig string
	// MetricsAddr is --metrics-bind-address: the Prometheus endpoint ("0" turns it off).
	MetricsAddr string
	// ProbeAddr is --health-probe-bind-address: the /healthz and /readyz endpoints.
	ProbeAddr string
	// PprofAddr is --pprof-bind-address: Go's /debug/pprof endpoints, for CPU and memory
	// profiles ("0", the default, turns them off).
	PprofAddr string
	// LeaderElect is --leader-elect: elect a leader among replicas.
	LeaderElect bool
	// Zap are the logging flags (--zap-log-level, ...).
	Zap zap.Options
}

// Bind adds the flags to fs; cluster says which cluster --kubeconfig reaches ("the cluster to
// run in").
func (m *ManagerFlags) Bind(fs *flag.FlagSet, cluster string) {
	fs.StringVar(&m.Kubeconfig, "kubeconfig", "", "kubeconfig of "+cluster+" (default: in-cluster configuration)")
	fs.StringVar(&m.MetricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	fs.StringVar(&m.ProbeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.StringVar(&m.PprofAddr, "pprof-bind-address", "0", "address of Go's /debug/pprof profiling endpoints, e.g. 127.0.0.1:6060 (0 disables them)")
	fs.BoolVar(&m.LeaderElect, "leader-elect", false, "elect a leader, for running several replicas")
	m.Zap.BindFlags(fs)
}

// Parse parses args with fs and refuses arguments that are not flags.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parsing flags: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	return nil
}

// ControllerOptions are the managers' controller options; tests that start a manager more than
// once in one process turn off the process-wide check of unique controller names.
var ControllerOptions config.Controller

// ManagerOptions are the options of a manager that these flags decide: its metrics and health
// endpoints, profiling and leader election, with the Lease leaderID in namespace, and ControllerOptions;
// the caller adds the rest (scheme, logger, cache).
func (m *ManagerFlags) ManagerOptions(leaderID, namespace string) manager.Options {
	return manager.Options{
		Controller:              ControllerOptions,
		Metrics:                 metricsserver.Options{BindAddress: m.MetricsAddr},
		HealthProbeBindAddress:  m.ProbeAddr,
		PprofBindAddress:        m.PprofAddr,
		LeaderElection:          m.LeaderElect,
		LeaderElectionID:        leaderID,
		LeaderElectionNamespace: namespace,
	}
}
