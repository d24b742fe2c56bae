package consts

const (
	// DiscoveryService is the DNS-SD service type clusters are published as, in DNS (DNS
	// discovery) and over multicast DNS in the local. domain (LAN discovery).
	DiscoveryService = "_liqo._tcp"
	// DiscoveryTXTClusterID is the TXT key holding a published cluster's ID.
	DiscoveryTXTClusterID = "cluster-id"
	// DiscoveryTXTVersion is the TXT key holding the version of the Liqo that publishes the
	// cluster (LAN discovery's announcer sets it).
	DiscoveryTXTVersion = "version"
	// DiscoveryTXTShares is the TXT key saying what the cluster shares with consumers: a
	// percent of its nodes' allocatable resources (e.g. 50%) or fixed amounts
	// (cpu=8,memory=16Gi); LAN discovery's announcer sets it.
	DiscoveryTXTShares = "shares"
)
