// Package gateway is the network fabric of a peering: a userspace WireGuard gateway (server or
// client) that runs in a gateway pod, or as a local process in a network namespace for tests and
// the sandbox. Its parts live in sub-packages, one concern each:
//
//   - tunnel: the wireguard-go device on a TUN interface, configured through wgctrl;
//   - netcfg: addresses, MTU, routes and policy-routing rules through netlink;
//   - nat: prefix NAT for remapped CIDRs and the TCP MSS clamp, in an nftables table of its own
//     written through netlink (no iptables binary in the image);
//   - probe: a UDP echo through the tunnel that measures its latency;
//   - agent: watches the peering's objects in the tenant namespace, drives the others and writes
//     the Connection.
//
// The binary is cmd/liqo-gateway.
package gateway
