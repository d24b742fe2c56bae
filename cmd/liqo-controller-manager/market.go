package main

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/peerkit/terraform-provider-liqo/controllers/offerpublication"
)

// setupMarket registers the reconcilers of seed 004's advertisement: the publication of the
// provider's Offers to its consumers' tenant namespaces.
func setupMarket(mgr ctrl.Manager, o *options) error {
	if err := (&offerpublication.Reconciler{Client: mgr.GetClient(), LiqoNamespace: o.identity.LiqoNamespace(),
		Recorder: mgr.GetEventRecorder("liqo-offer-publication")}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the offer publication reconciler: %w", err)
	}
	return nil
}
