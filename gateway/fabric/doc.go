// Package fabric is the dataplane of the network fabric inside one cluster: what upstream Liqo's
// liqo-fabric DaemonSet does on every node, and its gateway does towards the nodes, so that pods
// on any node (not only the gateway's) reach the peer's networks, and the peer's answers find
// their way back to them.
//
// It knows nothing of Kubernetes objects. A reconciler (or cmd/liqo-fabric, from a file) fills a
// Desired and hands it to a Dataplane, which makes the network namespace it runs in hold exactly
// that:
//
//   - Tunnels: one encapsulating link per (gateway, node) pair, point to point over the node
//     network, with the side's address of the internal CIDR (10.80.0.0/16 by default) as a /32.
//     Upstream uses Geneve on UDP port 6091. A kernel without Geneve (CONFIG_GENEVE not set) gets
//     VXLAN links with the same IDs, addresses and port instead; DetectEncap says which one the
//     kernel takes, and the Dataplane's Encap is what the reconciler reports in status. Both
//     ends of a tunnel must use the same encapsulation.
//   - Tables: policy routing, as upstream's RouteConfigurations: a routing table per name (its
//     ID derived from the name), rules (ip rule: dst, src, iif, fwmark, priority) that send
//     traffic to it, and the routes in it.
//   - Firewalls: nftables tables (family ip), as upstream's FirewallConfigurations: source NAT
//     rules in a chain "pre-postrouting" (nat, postrouting, priority srcnat-1, so it runs before
//     a CNI's masquerading and keeps its translation), and the connection marks that route the
//     answers to NodePort and host-network traffic back to the node it came from.
//
// NodeDesired and GatewayDesired build the Desired of a node and of a gateway the way upstream
// does (same table and chain names, marks and priorities); see their docs for the rules.
//
// Everything the Dataplane creates is marked as its own (links by their alias, rules and routes
// by their protocol number, nftables rules by their user data), so that Apply removes what is no
// longer desired even after a restart, and RemoveAll leaves nothing behind.
package fabric
