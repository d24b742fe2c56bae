package ipmapping_test

import (
	"os"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// cluster is shared by the tests that run the reconcilers themselves (one manager at a time,
// stopped when the test ends), each in its own namespaces; a test leaves no IP behind.
var cluster = testenv.NewShared(nil, testenv.ClusterOptions{Name: "a"})

// TestMain stops the shared cluster when the package's tests end.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunShared(m, cluster))
}
