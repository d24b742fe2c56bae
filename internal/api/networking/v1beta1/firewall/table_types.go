package firewall

// TableFamily is the nftables family of a table.
type TableFamily string

// The nftables families (upstream's spelling).
const (
	// TableFamilyINet is "inet", IPv4 and IPv6.
	TableFamilyINet TableFamily = "INET"
	// TableFamilyIPv4 is "ip".
	TableFamilyIPv4 TableFamily = "IPV4"
	// TableFamilyIPv6 is "ip6".
	TableFamilyIPv6 TableFamily = "IPV6"
	// TableFamilyARP is "arp".
	TableFamilyARP TableFamily = "ARP"
	// TableFamilyNetdev is "netdev".
	TableFamilyNetdev TableFamily = "NETDEV"
	// TableFamilyBridge is "bridge".
	TableFamilyBridge TableFamily = "BRIDGE"
)

// Table is one nftables table: the agent creates it with this name and family and replaces its
// chains with these.
type Table struct {
	// Name is the name of the nftables table (unique on the host).
	Name *string `json:"name"`
	// Chains are the base chains of the table.
	// +kubebuilder:validation:Optional
	Chains []Chain `json:"chains"`
	// Family is the nftables family of the table.
	// +kubebuilder:validation:Enum="INET";"IPV4";"IPV6";"ARP";"NETDEV";"BRIDGE"
	Family *TableFamily `json:"family"`
}
