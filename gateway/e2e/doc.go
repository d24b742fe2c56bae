// Package e2e tests the gateway end to end, as root: two network namespaces play the clusters'
// gateway hosts, one more behind each plays a pod, and the gateways run as processes
// (cmd/liqo-gateway under `ip netns exec`) driven by real objects in two test-bed clusters. Its
// benchmark measures throughput, handshake time and latency through the tunnel. Elsewhere the
// tests skip with a message.
package e2e
