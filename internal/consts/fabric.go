package consts

// The network fabric (issue 32): how every node of a cluster reaches the gateways, with upstream
// Liqo v1.2's objects (networking.liqo.io InternalNode, InternalFabric, GeneveTunnel,
// RouteConfiguration, FirewallConfiguration), labels and defaults, so that its tools read ours.
const (
	// DefaultInternalCIDR is the internal network the fabric takes the nodes' and gateways'
	// tunnel addresses from (upstream's chart's ipam.internalCIDR default).
	DefaultInternalCIDR = "10.80.0.0/16"
	// InternalCIDRNetwork is the type (and name) of the cluster's internal CIDR Network.
	InternalCIDRNetwork = "internal-cidr"
	// DefaultGenevePort is the UDP port of the fabric's Geneve tunnels (upstream's
	// networking.genevePort default); the VXLAN fallback uses it too.
	DefaultGenevePort = 6091
	// FabricInterfacePrefix starts the name of every fabric tunnel interface ("liqo." and 10
	// random lower-case letters and digits, as upstream names them).
	FabricInterfacePrefix = "liqo."
	// GatewayTunnelInterface is the name of a gateway's tunnel interface towards its peer, as
	// upstream names it (the gateway's routes to a local pod match it as input interface).
	GatewayTunnelInterface = "liqo-tunnel"

	// InternalFabricNameLabel names, on a GeneveTunnel, its InternalFabric.
	InternalFabricNameLabel = "networking.liqo.io/internal-fabric-name"
	// InternalNodeNameLabel names, on a GeneveTunnel, its InternalNode.
	InternalNodeNameLabel = "networking.liqo.io/internal-node-name"
	// InternalFabricTunnelsFinalizer holds an InternalFabric until its GeneveTunnels are gone.
	InternalFabricTunnelsFinalizer = "networking.liqo.io/internal-fabric-geneve-tunnel-finalizer"

	// RouteCategoryLabel selects the agents that apply a RouteConfiguration:
	// RouteCategoryFabric (every node's fabric agent) or RouteCategoryGateway (the gateways).
	RouteCategoryLabel = "networking.liqo.io/route-category"
	// RouteSubCategoryLabel narrows RouteCategoryLabel (RouteSubCategoryFabric: every gateway's
	// routes to the nodes; RouteSubCategoryFabricNode: with RouteUniqueLabel, one node's).
	RouteSubCategoryLabel = "networking.liqo.io/route-subcategory"
	// RouteUniqueLabel names the one node or peer a RouteConfiguration is for.
	RouteUniqueLabel = "networking.liqo.io/route-unique"
	// RouteCategoryFabric is RouteCategoryLabel's value for the nodes' fabric agents.
	RouteCategoryFabric = "fabric"
	// RouteCategoryGateway is RouteCategoryLabel's value for the gateways.
	RouteCategoryGateway = "gateway"
	// RouteSubCategoryFabric is RouteSubCategoryLabel's value for a gateway's routes to nodes.
	RouteSubCategoryFabric = "fabric"
	// RouteSubCategoryFabricNode is RouteSubCategoryLabel's value for one node's routes.
	RouteSubCategoryFabricNode = "fabric-node"

	// FirewallCategoryLabel selects the agents that apply a FirewallConfiguration:
	// FirewallCategoryFabric (the nodes' fabric agents) or FirewallCategoryGateway.
	FirewallCategoryLabel = "networking.liqo.io/firewall-category"
	// FirewallSubCategoryLabel narrows FirewallCategoryLabel: FirewallSubCategoryAllNodes,
	// FirewallSubCategorySingleNode (with FirewallUniqueLabel naming the node) or, for the
	// gateways, FirewallSubCategoryFabric.
	FirewallSubCategoryLabel = "networking.liqo.io/firewall-subcategory"
	// FirewallUniqueLabel names the one node a FirewallConfiguration is for.
	FirewallUniqueLabel = "networking.liqo.io/firewall-unique"
	// FirewallCategoryFabric is FirewallCategoryLabel's value for the nodes' fabric agents.
	FirewallCategoryFabric = "fabric"
	// FirewallCategoryGateway is FirewallCategoryLabel's value for the gateways.
	FirewallCategoryGateway = "gateway"
	// FirewallSubCategoryAllNodes is FirewallSubCategoryLabel's value for every node.
	FirewallSubCategoryAllNodes = "all-nodes"
	// FirewallSubCategorySingleNode is FirewallSubCategoryLabel's value for one node.
	FirewallSubCategorySingleNode = "single-node"
	// FirewallSubCategoryFabric is FirewallSubCategoryLabel's value for the gateways' fabric rules.
	FirewallSubCategoryFabric = "fabric"
)
