package objects_test

import (
	"os"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	rt "github.com/peerkit/terraform-provider-liqo/vnode/reflection/reflectiontest"
)

// clusters are the consumer and the provider that TestReflection and TestPoliciesAndIngresses
// share, each with its own namespaces and reflectors.
var clusters = rt.Shared(testenv.ClusterOptions{}, testenv.ClusterOptions{})

// TestMain stops the shared clusters when the package's tests end.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunShared(m, clusters))
}
