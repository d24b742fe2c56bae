package shadowpod_test

import (
	"os"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// provider is a cluster with a scheduler and a KWOK node, shared by the tests that run the
// ShadowPod controller themselves (one manager at a time, stopped when the test ends), each in
// its own namespaces.
var provider = testenv.NewShared(nil, testenv.ClusterOptions{Name: "provider", Scheduler: true,
	Nodes: []testenv.NodeOptions{{Name: "node-1"}}})

// TestMain stops the shared cluster when the package's tests end.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunShared(m, provider))
}
