package testenv

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/peerkit/terraform-provider-liqo/internal/webhookserver"
)

// NewManager makes a controller-runtime manager for cfg and scheme as a test wants it: no
// metrics server and no health probes (nothing to bind), and controller names not checked for
// uniqueness (a test process makes several managers, often with the same controllers).
func NewManager(cfg *rest.Config, scheme *runtime.Scheme) (manager.Manager, error) {
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("making a manager for %s: %w", cfg.Host, err)
	}
	return mgr, nil
}

// RunManager starts mgr in the background and stops it when the test ends, or before when the
// returned stop is called (which waits for it; later calls do nothing). An error from the
// manager's Start is reported with tb.Errorf, naming the manager with name.
func RunManager(tb testing.TB, name string, mgr manager.Manager) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("%s: %v", name, err)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}

// StartManager makes a manager for cl (NewManager with its Config and its client's scheme),
// lets setup, if not nil, register reconcilers, webhooks or other runnables on it, and runs it
// until the test ends (RunManager); stop stops it earlier. A manager that cannot be made or set
// up fails the test at once.
func StartManager(tb testing.TB, cl *Cluster, setup func(mgr manager.Manager) error) (stop func()) {
	tb.Helper()
	mgr, err := NewManager(cl.Config, cl.Client.Scheme())
	if err != nil {
		tb.Fatalf("cluster %s: %v", cl.Name, err)
	}
	if setup != nil {
		if err := setup(mgr); err != nil {
			tb.Fatalf("setting up the manager of cluster %s: %v", cl.Name, err)
		}
	}
	return RunManager(tb, "manager of cluster "+cl.Name, mgr)
}

// LocalWebhookServer makes a webhook server (internal/webhookserver) for cl that listens on a
// free port of 127.0.0.1 and registers its webhooks with cl's API server at that address over
// HTTPS, as a manager running outside the cluster does. Register handlers and webhooks on it,
// then add it to the manager (in StartManager's setup); it fails the test if it cannot be made.
func LocalWebhookServer(tb testing.TB, cl *Cluster) *webhookserver.Server {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatalf("webhook server of cluster %s: %v", cl.Name, err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ws, err := webhookserver.New(cl.Client, webhookserver.Options{URL: "https://" + addr, BindAddress: addr})
	if err != nil {
		tb.Fatalf("webhook server of cluster %s: %v", cl.Name, err)
	}
	return ws
}
