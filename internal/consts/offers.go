package consts

// Seed 004's advertisement (market.peerkit.io Offers, ours, not upstream Liqo's): a provider
// declares its Offers in its Liqo namespace; its controller manager publishes a copy of each in
// the tenant namespace of every consumer the offer is made to.
const (
	// OfferOriginLabel names, on a published copy of an Offer in a tenant namespace, the Offer
	// in the Liqo namespace it copies. Only copies carry it.
	OfferOriginLabel = "market.peerkit.io/offer"
)
