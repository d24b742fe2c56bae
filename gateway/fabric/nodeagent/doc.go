// Package nodeagent is the in-cluster side of the network fabric's node agent (upstream Liqo
// v1.2's liqo-fabric DaemonSet, pkg/fabric, and the fabric part of its gateway,
// pkg/gateway/fabric): a reconciler that runs on every node with the node's name, reads the
// fabric objects the controller manager makes (networking.liqo.io InternalNode, InternalFabric,
// GeneveTunnel, FirewallConfiguration, RouteConfiguration) and the Nodes, builds the node's
// gateway/fabric Desired and applies it to the node's network namespace through a
// fabric.Dataplane.
//
// On every node, for each InternalFabric whose gateway runs elsewhere: the tunnel link
// (spec.interface.node.name, the node's GeneveTunnel's ID, towards spec.gatewayIP, with the
// InternalNode's spec.interface.node.ip) and the table "<fabric>-node-gw" that routes
// spec.remoteCIDRs through it (fabric.NodeDesired); the FirewallConfigurations of category
// "fabric" for all nodes or this one (the peerings' masquerade bypass) as nftables tables.
//
// On the node that hosts a gateway (our gateways run with hostNetwork: InternalFabric
// spec.gatewayIP is one of this namespace's addresses), the agent does not tunnel to itself: it
// applies the gateway's side instead (fabric.GatewayDesired): a link per other node (the
// InternalNode's spec.interface.gateway.name and the (fabric, node) GeneveTunnel's ID, towards
// the node's status.nodeIP.remote), and the routes back from the gateway's tunnel interface to
// each other node's pods: its pod CIDRs when every other node has spec.podCIDRs, else a /32 per
// pod from the RouteConfiguration "<node>-gw-node" the controller manager keeps.
//
// The agent writes the node's source address into its InternalNode's status.nodeIP (remote:
// towards a gateway on another node; local: towards one on this node), as upstream's source
// detector does, and records the tunnels' encapsulation (Geneve, or VXLAN on kernels without
// Geneve) as an Event on the InternalNode, since upstream's status has no field for it.
//
// Every object change rebuilds the whole Desired, so the node converges whatever changed (a node
// or a fabric removed, a gateway moved to another node), and a periodic resync repairs what
// someone else changed. Cleanup removes everything the fabric made (on SIGTERM).
package nodeagent
