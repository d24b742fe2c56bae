package provider_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/provider"
)

// env holds the two clusters every acceptance test of this package uses: "consumer" and
// "provider", with controller managers so that namespaces finish deleting.
var env *testenv.Env

// TestMain starts the clusters once for the package. Acceptance tests always run (TF_ACC=1):
// they use the real terraform binary against real API servers.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		// Every test of the package runs terraform against the two clusters (or reads them):
		// `make test-unit` (-short) leaves the whole package to `make test`.
		fmt.Println("-short: the provider's tests need real clusters and terraform (make test runs them)")
		return 0
	}
	if os.Getenv("TF_ACC") == "" {
		_ = os.Setenv("TF_ACC", "1")
	}
	var err error
	env, err = testenv.Start(context.Background(),
		testenv.ClusterOptions{Name: "consumer", ControllerManager: true},
		testenv.ClusterOptions{Name: "provider", ControllerManager: true},
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting test clusters:", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping test clusters:", err)
		}
		if providerBinDir != "" { // built by providerBinary for the CLI tests
			_ = os.RemoveAll(providerBinDir)
		}
	}()
	return m.Run()
}

// protoV6Providers serves the provider in-process to the terraform binary.
var protoV6Providers = map[string]func() (tfprotov6.ProviderServer, error){
	"liqo": providerserver.NewProtocol6WithError(provider.New("test")()),
}

// providerBlock configures both test clusters in one block's clusters map.
func providerBlock() string {
	return fmt.Sprintf(`
provider "liqo" {
  clusters = {
    consumer = { config_path = %q }
    provider = { config_path = %q }
  }
}
`, env.Cluster("consumer").KubeconfigPath, env.Cluster("provider").KubeconfigPath)
}

// cluster returns a test cluster by name.
func cluster(name string) *testenv.Cluster { return env.Cluster(name) }
