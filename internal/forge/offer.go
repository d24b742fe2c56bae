package forge

import (
	"k8s.io/apimachinery/pkg/api/equality"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// MutateOffer brings an Offer (seed 004's advertisement, declared on the provider in its Liqo
// namespace) to spec, keeping its labels and annotations.
func MutateOffer(o *marketv1alpha1.Offer, spec *marketv1alpha1.OfferSpec) {
	o.Spec = *spec.DeepCopy()
}

// MutateConsumerContract makes c the consumer's Contract on terms (in its tenant namespace of
// the provider, named as the ResourceSlice it is for): labelled consts.ReplicationLabel=true and
// consts.RemoteClusterIDLabel=the terms' provider (so the consumer's controllers replicate it to
// the provider), with the terms. A change of terms drops the consumer's signature: the consumer's
// controller manager signs the new terms.
func MutateConsumerContract(c *marketv1alpha1.Contract, terms *marketv1alpha1.ContractTerms) {
	setLabels(c, map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: string(terms.ProviderClusterID)})
	if !equality.Semantic.DeepEqual(c.Spec.Terms, *terms) {
		c.Spec.ConsumerSignature = nil
	}
	c.Spec.Terms = *terms.DeepCopy()
}
