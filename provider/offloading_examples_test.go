package provider_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestAccOffloadingExamples plans the documentation's examples of the offloading resources
// against the test clusters, so that they stay valid as the schema changes.
func TestAccOffloadingExamples(t *testing.T) {
	for _, name := range []string{"liqo_resource_slice", "liqo_namespace_offloading"} {
		src, err := os.ReadFile(filepath.Join("..", "examples", "resources", name, "resource.tf"))
		if err != nil {
			t.Fatal(err)
		}
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: protoV6Providers,
			Steps: []resource.TestStep{{
				Config:             providerBlock() + string(src),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			}},
		})
	}
}
