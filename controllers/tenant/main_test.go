package tenant_test

import (
	"context"
	"os"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// loneProvider is a provider without a consumer cluster, with identity cl-provider and
// kube-controller-manager (it signs the CSRs), shared by the tests that play the consumers
// themselves, each with its own consumer IDs and tenant namespaces. The tests of a handshake
// between two clusters start their own pair (peerClusters): the tenant controllers they run
// act on every Tenant, and the consumer's ID names the provider's CSRs and bindings. The
// renewal storm tests start theirs too, with their own CSR signing duration.
var loneProvider = testenv.NewShared(func(ctx context.Context, env *testenv.Env) error {
	_, err := clusteridentity.Ensure(ctx, env.Clusters[0].Client, clusteridentity.Config{ClusterID: "cl-provider"})
	return err
}, testenv.ClusterOptions{Name: "provider", ControllerManager: true})

// TestMain stops the shared cluster when the package's tests end.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunShared(m, loneProvider))
}
