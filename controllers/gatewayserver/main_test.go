package gatewayserver_test

import (
	"os"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// plain is a cluster without nodes' controllers, shared by the tests that run the reconciler
// themselves (one manager at a time, stopped when the test ends), each with its own tenant
// namespaces and UDP ports: every GatewayServer of the cluster counts in a port conflict.
var plain = testenv.NewShared(nil, testenv.ClusterOptions{Name: "a"})

// TestMain stops the shared cluster when the package's tests end.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunShared(m, plain))
}
