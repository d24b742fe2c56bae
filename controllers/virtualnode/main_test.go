package virtualnode_test

import (
	"os"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// peered is a consumer with kube-controller-manager (garbage collection of owned objects, CSR
// signing) and a provider, shared by the tests of the virtual nodes' Deployments and of the
// virtual nodes made from slices (which uses the consumer only), one at a time: each runs its
// own manager, stopped when it ends. Both peer with cl-provider in the same tenant namespace:
// TestDeploymentRunner, which runs first, leaves no VirtualNode, Node, NamespaceMap or
// kubeconfig Secret there.
var peered = testenv.NewShared(nil,
	testenv.ClusterOptions{Name: "consumer", ControllerManager: true},
	testenv.ClusterOptions{Name: "provider"})

// TestMain stops the shared clusters when the package's tests end.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunShared(m, peered))
}
