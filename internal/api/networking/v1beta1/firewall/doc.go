// Package firewall holds the nftables table of a networking.liqo.io/v1beta1
// FirewallConfiguration (upstream Liqo v1.2's schema): a table of chains, each a list of NAT,
// filter or route rules. The agent that owns a FirewallConfiguration (the fabric agent on every
// node, or the gateway) renders the table as one nftables table of that name and family, with
// one base chain per Chain, and deletes the table when the object goes.
// +kubebuilder:object:generate=true
package firewall
