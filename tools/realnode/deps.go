//go:build tools

// Package realnode pins the node commands that a real test node runs, built from source by
// tools/realnode/build.sh: kubelet and kube-proxy, from the same k8s.io/kubernetes as the test
// bed's control plane.
package realnode

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
