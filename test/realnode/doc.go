// Package realnode holds the end-to-end tests that run our components as real pods: the chart
// installed with the real helm into test-bed clusters whose node is a real kubelet with
// containerd (internal/test/testenv's RealNode), from the images `make images` builds (imported into
// the node's containerd; nothing is pulled). They run as root on Linux with LIQO_REALNODE_BIN,
// LIQO_HELM and LIQO_IMAGES set (`make test` sets them) and skip otherwise.
package realnode
