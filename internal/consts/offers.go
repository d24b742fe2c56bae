package consts

// Seed 004's advertisement (market.peerkit.io Offers, ours, not upstream Liqo's): a provider
// declares its Offers in its Liqo namespace; its controller manager publishes a copy of each in
// the tenant namespace of every consumer the offer is made to.
const (
	// OfferOriginLabel names, on a published copy of an Offer in a tenant namespace, the Offer
	// in the Liqo namespace it copies. Only copies carry it.
	OfferOriginLabel = "market.peerkit.io/offer"
)

// Seed 004's contract (market.peerkit.io Contracts): the consumer keeps its Contract in the
// tenant namespace of the provider, named as the ResourceSlice it is for, and signs it; it is
// replicated to the provider, which checks it against its Offer, countersigns it in the status
// and keeps its own copy in its Liqo namespace (ProviderContractName), out of the consumer's
// reach: the grant of the slice follows that copy.
const (
	// ContractAnnotation, on a ResourceSlice (the consumer's, and its copy on the provider),
	// names the Contract (in the same tenant namespace) the slice's grant follows.
	ContractAnnotation = "market.peerkit.io/contract"
	// ContractExpiredAnnotation ("true"), on the provider's copy of a ResourceSlice, cordons the
	// slice because its contract ended: written by the provider only, removed on renewal.
	ContractExpiredAnnotation = "market.peerkit.io/contract-expired"
	// ContractConsumerLabel, on the provider's own copy of a Contract (in its Liqo namespace),
	// is the consumer's cluster ID.
	ContractConsumerLabel = "market.peerkit.io/consumer"
	// ContractNameLabel, on the provider's own copy of a Contract, is the name of the Contract in
	// the consumer's tenant namespace.
	ContractNameLabel = "market.peerkit.io/contract-name"
	// ContractSignedTermsAnnotation, on the consumer's Contract, is the digest
	// (contract.TermsDigest) of the terms its controller manager signed: the replication
	// controller sends the provider only terms the consumer signed, so the provider never sees
	// (and refuses) terms between their writing and their signature.
	ContractSignedTermsAnnotation = "market.peerkit.io/signed-terms"
)

// ProviderContractName is the name of the provider's own copy (in its Liqo namespace) of the
// Contract name of consumer, as VirtualNodeName names a virtual node: "<consumer>-<name>".
func ProviderContractName(consumer, name string) string {
	return consumer + "-" + name
}
