package main

import (
	"context"
	"flag"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/contractacceptance"
	"github.com/peerkit/terraform-provider-liqo/controllers/contractsigning"
	"github.com/peerkit/terraform-provider-liqo/controllers/offerpublication"
	"github.com/peerkit/terraform-provider-liqo/controllers/replication"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
)

// marketOptions are the flags of seed 004's advertisement.
type marketOptions struct {
	// defaultOffer is the spec (JSON) of the default offer; "" for none.
	defaultOffer string
	// defaultOfferName names the default offer.
	defaultOfferName string
}

func (m *marketOptions) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&m.defaultOffer, "default-offer", "", "the spec (JSON, market.peerkit.io/v1alpha1 OfferSpec) of the offer the "+
		"provider makes by default, kept in --liqo-namespace and published to the consumers it is made to (the chart's "+
		"defaultOffer.spec); empty: none, and a default offer made before is withdrawn")
	fs.StringVar(&m.defaultOfferName, "default-offer-name", "default", "the name of the default offer")
}

// ensureDefaultOffer makes (or withdraws) the default offer the flags ask for.
func ensureDefaultOffer(ctx context.Context, c client.Client, o *options) error {
	var spec *marketv1alpha1.OfferSpec
	if o.market.defaultOffer != "" {
		var err error
		if spec, err = offers.ParseSpec(o.market.defaultOffer); err != nil {
			return fmt.Errorf("--default-offer: %w", err)
		}
	}
	return offers.EnsureDefault(ctx, c, o.identity.LiqoNamespace(), o.market.defaultOfferName, spec)
}

// setupMarket registers the reconcilers of seed 004's advertisement and contract: the
// publication of the provider's Offers to its consumers' tenant namespaces; on the consumer, the
// signing of its Contracts and their replication to the provider; on the provider, their
// acceptance (countersigned, or refused); and the metering of the contracts (metering.go).
func setupMarket(mgr ctrl.Manager, o *options) error {
	if err := setupMetering(mgr, o); err != nil { // metering.go
		return err
	}
	liqoNS := o.identity.LiqoNamespace()
	if err := (&offerpublication.Reconciler{Client: mgr.GetClient(), LiqoNamespace: liqoNS,
		Recorder: mgr.GetEventRecorder("liqo-offer-publication")}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the offer publication reconciler: %w", err)
	}
	if err := (&contractsigning.Reconciler{Client: mgr.GetClient(), LiqoNamespace: liqoNS, ClusterID: o.identity.ClusterID,
		Recorder: mgr.GetEventRecorder("liqo-contract-signing")}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the contract signing reconciler: %w", err)
	}
	if err := replication.NewContractReconciler(mgr.GetClient(), o.identity.ClusterID).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Contract replication reconciler: %w", err)
	}
	if err := (&contractacceptance.Reconciler{Client: mgr.GetClient(), LiqoNamespace: liqoNS, ClusterID: o.identity.ClusterID,
		Recorder: mgr.GetEventRecorder("liqo-contract-acceptance")}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the contract acceptance reconciler: %w", err)
	}
	return nil
}
