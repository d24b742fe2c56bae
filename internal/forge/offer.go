package forge

import (
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
)

// MutateOffer brings an Offer (seed 004's advertisement, declared on the provider in its Liqo
// namespace) to spec, keeping its labels and annotations.
func MutateOffer(o *marketv1alpha1.Offer, spec *marketv1alpha1.OfferSpec) {
	o.Spec = *spec.DeepCopy()
}
