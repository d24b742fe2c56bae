package main

import (
	"flag"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/peerkit/terraform-provider-liqo/controllers/contractmetering"
)

// meteringOptions are the flags of seed 004's metering of contracts.
type meteringOptions struct {
	// interval is how often each running contract is metered.
	interval time.Duration
}

func (m *meteringOptions) bindFlags(fs *flag.FlagSet) {
	fs.DurationVar(&m.interval, "contract-metering-interval", contractmetering.DefaultInterval, "how often the provider meters "+
		"what its consumers' offloaded pods request under each running contract (status.resourceSeconds and accruedCost of "+
		"the Contracts, and the liqo_contract_* metrics); the chart's contractMeteringInterval")
}

// setupMetering registers the metering of the provider's contracts and the exporter of every
// kept contract's metered status as Prometheus gauges (both sides).
func setupMetering(mgr ctrl.Manager, o *options) error {
	if o.metering.interval <= 0 {
		return fmt.Errorf("--contract-metering-interval %s: set a positive duration, such as 30s", o.metering.interval)
	}
	if err := (&contractmetering.Reconciler{Client: mgr.GetClient(), LiqoNamespace: o.identity.LiqoNamespace(),
		Interval: o.metering.interval}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the contract metering reconciler: %w", err)
	}
	if err := (&contractmetering.Exporter{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the contract metrics exporter: %w", err)
	}
	return nil
}
