package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// TestResourceIdentities: every managed resource has a resource identity, of schema version 0,
// whose attributes are string attributes of its state that replace the resource when they change
// (so an object's identity never changes); its import-by-identity example
// (examples/resources/<type>/import-by-identity.tf, rendered in docs/) imports it with exactly
// those attributes.
func TestResourceIdentities(t *testing.T) {
	ctx := t.Context()
	resources := New("test")().Resources(ctx)
	if len(resources) != 15 {
		t.Errorf("the provider has %d resources, this test knows 15: check the new ones have an identity", len(resources))
	}
	for _, newResource := range resources {
		r := newResource()
		var meta resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "liqo"}, &meta)
		t.Run(meta.TypeName, func(t *testing.T) {
			withIdentity, ok := r.(resource.ResourceWithIdentity)
			if !ok {
				t.Fatalf("%s has no resource identity", meta.TypeName)
			}
			var id resource.IdentitySchemaResponse
			withIdentity.IdentitySchema(ctx, resource.IdentitySchemaRequest{}, &id)
			if id.IdentitySchema.Version != 0 {
				t.Errorf("identity schema version %d, want 0", id.IdentitySchema.Version)
			}
			var s resource.SchemaResponse
			r.Schema(ctx, resource.SchemaRequest{}, &s)
			var names []string
			for name := range id.IdentitySchema.Attributes {
				names = append(names, name)
				attr, ok := s.Schema.Attributes[name].(schema.StringAttribute)
				if !ok {
					t.Errorf("identity attribute %s is not a string attribute of the state", name)
					continue
				}
				if !replaces(t, attr) {
					t.Errorf("changing %s does not replace the resource: the identity would change", name)
				}
			}
			slices.Sort(names)
			example, err := os.ReadFile(filepath.Join("..", "examples", "resources", meta.TypeName, "import-by-identity.tf"))
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`(?m)^\s*to\s*=\s*` + meta.TypeName + `\.`).Match(example) {
				t.Errorf("import-by-identity.tf does not import a %s:\n%s", meta.TypeName, example)
			}
			block := regexp.MustCompile(`(?s)identity\s*=\s*\{(.*?)\}`).FindSubmatch(example)
			if block == nil {
				t.Fatalf("import-by-identity.tf has no identity:\n%s", example)
			}
			var given []string
			for _, m := range regexp.MustCompile(`(?m)^\s*(\w+)\s*=`).FindAllSubmatch(block[1], -1) {
				given = append(given, string(m[1]))
			}
			slices.Sort(given)
			if !slices.Equal(given, names) {
				t.Errorf("import-by-identity.tf gives %v, the identity is %v", given, names)
			}
		})
	}
}

// replaces tells whether a change of the attribute's value replaces the resource.
func replaces(t *testing.T, attr schema.StringAttribute) bool {
	t.Helper()
	raw := tftypes.NewValue(tftypes.String, "some") // any non-null state and plan: an update
	req := planmodifier.StringRequest{
		State: tfsdk.State{Raw: raw}, Plan: tfsdk.Plan{Raw: raw},
		StateValue: types.StringValue("old"), PlanValue: types.StringValue("new"), ConfigValue: types.StringValue("new"),
	}
	for _, m := range attr.PlanModifiers {
		resp := &planmodifier.StringResponse{PlanValue: req.PlanValue}
		m.PlanModifyString(t.Context(), req, resp)
		if resp.RequiresReplace {
			return true
		}
	}
	return false
}
