package consts

// In-band control plane: a cluster's API-server proxy (an HTTP CONNECT proxy in the Liqo
// namespace that only reaches the cluster's API server) gets an address in the cluster's
// external CIDR, recorded in an ipam.liqo.io IP; the gateways translate that address to the
// proxy's, so that a peer reaches the API server through the tunnel (upstream Liqo v1.2's names).
const (
	// IPTypeLabel gives the role of an ipam.liqo.io IP object.
	IPTypeLabel = "ipam.liqo.io/ip-type"
	// APIServerProxyIP is the name, in the Liqo namespace, and the IPTypeLabel value of the IP
	// of the API-server proxy.
	APIServerProxyIP = "api-server-proxy"
	// APIServerProxyApp is the AppNameLabel value of the API-server proxy's Service.
	APIServerProxyApp = "proxy"
	// APIServerProxyService is the name of the API-server proxy's Service in the Liqo namespace.
	APIServerProxyService = "liqo-proxy"
	// APIServerProxyPort is the proxy's TCP port (upstream's default, which liqoctl assumes).
	APIServerProxyPort = 8118
	// PreinstalledAnnotation ("true") marks an object the installation made, not a peering.
	PreinstalledAnnotation = "liqo.io/preinstalled"
)
