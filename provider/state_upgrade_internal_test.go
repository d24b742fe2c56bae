package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// recordedBlock is a resource schema's block as `terraform providers schema -json` shows it,
// reduced to what the state's shape depends on (testdata/schema-v<N>.json).
type recordedBlock struct {
	Attributes map[string]struct {
		Type       json.RawMessage `json:"type"`
		NestedType *struct {
			NestingMode string `json:"nesting_mode"`
			recordedBlock
		} `json:"nested_type"`
	} `json:"attributes"`
	BlockTypes map[string]struct {
		NestingMode string        `json:"nesting_mode"`
		Block       recordedBlock `json:"block"`
	} `json:"block_types"`
}

// recordedShapes reads testdata/schema-v<version>.json: the resources' blocks at that version.
func recordedShapes(t *testing.T, version int64) map[string]recordedBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("schema-v%d.json", version)))
	if err != nil {
		t.Fatalf("the recorded shape of version %d: %v", version, err)
	}
	var shapes map[string]struct {
		Version int64         `json:"version"`
		Block   recordedBlock `json:"block"`
	}
	if err := json.Unmarshal(data, &shapes); err != nil {
		t.Fatal(err)
	}
	out := map[string]recordedBlock{}
	for name, s := range shapes {
		if s.Version != version {
			t.Fatalf("schema-v%d.json: %s has version %d", version, name, s.Version)
		}
		out[name] = s.Block
	}
	return out
}

// sampleOfType is a value of a cty JSON type as the state holds it, with every part set.
func sampleOfType(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var name string
	if json.Unmarshal(raw, &name) == nil {
		switch name {
		case "string":
			return "sample"
		case "number":
			return 1
		case "bool":
			return true
		}
		t.Fatalf("type %s", raw)
	}
	var compound []json.RawMessage
	if err := json.Unmarshal(raw, &compound); err != nil || len(compound) != 2 {
		t.Fatalf("type %s: %v", raw, err)
	}
	var kind string
	_ = json.Unmarshal(compound[0], &kind)
	switch kind {
	case "list", "set":
		return []any{sampleOfType(t, compound[1])}
	case "map":
		return map[string]any{"key": sampleOfType(t, compound[1])}
	case "object":
		var attrs map[string]json.RawMessage
		if err := json.Unmarshal(compound[1], &attrs); err != nil {
			t.Fatal(err)
		}
		out := map[string]any{}
		for k, v := range attrs {
			out[k] = sampleOfType(t, v)
		}
		return out
	}
	t.Fatalf("type %s", raw)
	return nil
}

// sampleOfNesting is the value of a nested attribute or block with the given nesting mode.
func sampleOfNesting(mode string, object map[string]any) any {
	switch mode {
	case "list", "set":
		return []any{object}
	case "map":
		return map[string]any{"key": object}
	}
	return object
}

// sample is a state of a recorded block with every attribute and block set.
func (b recordedBlock) sample(t *testing.T) map[string]any {
	t.Helper()
	out := map[string]any{}
	for name, a := range b.Attributes {
		if a.NestedType != nil {
			out[name] = sampleOfNesting(a.NestedType.NestingMode, a.NestedType.sample(t))
			continue
		}
		out[name] = sampleOfType(t, a.Type)
	}
	for name, bt := range b.BlockTypes {
		out[name] = sampleOfNesting(bt.NestingMode, bt.Block.sample(t))
	}
	return out
}

// upgrade runs a resource's upgrader from version on a state written then (JSON), as the
// framework does, and returns the state it yields, or an error.
func upgrade(ctx context.Context, r resource.Resource, version int64, state []byte) (tftypes.Value, error) {
	current := resourceSchema(ctx, r)
	u, ok := r.(resource.ResourceWithUpgradeState).UpgradeState(ctx)[version]
	if !ok {
		return tftypes.Value{}, fmt.Errorf("no upgrader from version %d", version)
	}
	req := resource.UpgradeStateRequest{RawState: &tfprotov6.RawState{JSON: state}}
	if u.PriorSchema != nil {
		prior, err := req.RawState.UnmarshalWithOpts(u.PriorSchema.Type().TerraformType(ctx), tfprotov6.UnmarshalOpts{})
		if err != nil {
			return tftypes.Value{}, fmt.Errorf("decoding with the prior schema: %w", err)
		}
		req.State = &tfsdk.State{Raw: prior, Schema: *u.PriorSchema}
	}
	resp := resource.UpgradeStateResponse{State: tfsdk.State{Schema: current, Raw: tftypes.NewValue(current.Type().TerraformType(ctx), nil)}}
	u.StateUpgrader(ctx, req, &resp)
	if resp.Diagnostics.HasError() {
		return tftypes.Value{}, fmt.Errorf("upgrader: %v", resp.Diagnostics)
	}
	if resp.DynamicValue != nil {
		v, err := resp.DynamicValue.Unmarshal(current.Type().TerraformType(ctx))
		if err != nil {
			return tftypes.Value{}, fmt.Errorf("decoding the upgraded state with the current schema: %w", err)
		}
		return v, nil
	}
	return resp.State.Raw, nil
}

// resourceSchema is a resource's schema.
func resourceSchema(ctx context.Context, r resource.Resource) schema.Schema {
	var resp resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &resp)
	return resp.Schema
}

// carriedOver checks that an upgraded state is one, and that it keeps every attribute of the
// earlier state: under the same name and type with the same value, or retyped (the upgrader
// converts it). An attribute the current schema lacks would be lost from users' states.
func carriedOver(ctx context.Context, current schema.Schema, earlier map[string]any, upgraded tftypes.Value) []error {
	var got map[string]tftypes.Value
	if err := upgraded.As(&got); err != nil || upgraded.IsNull() {
		return []error{fmt.Errorf("the upgraded state is no object: %v (%w)", upgraded, err)}
	}
	types, _ := current.Type().TerraformType(ctx).(tftypes.Object)
	var errs []error
	for name, value := range earlier {
		typ, ok := types.AttributeTypes[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s is not in the current schema: its value in users' states would be lost; raise "+
				"resourceSchemaVersion and write an upgrader that moves it", name))
			continue
		}
		data, err := json.Marshal(value)
		if err != nil {
			return append(errs, err)
		}
		want, err := tftypes.ValueFromJSONWithOpts(data, typ, tftypes.ValueFromJSONOpts{})
		if err != nil {
			continue // retyped: the upgrader converts it
		}
		if !got[name].Equal(want) {
			errs = append(errs, fmt.Errorf("%s was %v, upgraded to %v: not carried over", name, want, got[name]))
		}
	}
	return errs
}

// TestStateUpgrades: every resource's schema has the current version and an upgrader from each
// earlier one; a state of every resource written at every earlier version (testdata's recorded
// shapes, with every attribute and block set) upgrades to a state of the current schema. So a
// change that renames, removes or retypes an attribute fails here until the version is raised
// and an upgrader written. A state holding an attribute that the current schema lacks fails the
// upgrade, naming it.
func TestStateUpgrades(t *testing.T) {
	ctx := context.Background()
	resources := map[string]resource.Resource{}
	for _, newResource := range (&liqoProvider{}).Resources(ctx) {
		r := newResource()
		var meta resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "liqo"}, &meta)
		resources[meta.TypeName] = r
		if v := resourceSchema(ctx, r).Version; v != resourceSchemaVersion {
			t.Errorf("%s: schema version %d, want %d", meta.TypeName, v, resourceSchemaVersion)
		}
		u, ok := r.(resource.ResourceWithUpgradeState)
		if !ok {
			t.Errorf("%s has no state upgraders", meta.TypeName)
			continue
		}
		for v := range int64(resourceSchemaVersion) {
			if _, ok := u.UpgradeState(ctx)[v]; !ok {
				t.Errorf("%s: no upgrader from version %d", meta.TypeName, v)
			}
		}
	}
	for version := range int64(resourceSchemaVersion) {
		for name, block := range recordedShapes(t, version) {
			t.Run(name+"/v"+strconv.FormatInt(version, 10), func(t *testing.T) {
				r, ok := resources[name]
				if !ok {
					t.Fatalf("%s, in the state of version %d, is no longer a resource of the provider: users' states hold it", name, version)
				}
				state, err := json.Marshal(block.sample(t))
				if err != nil {
					t.Fatal(err)
				}
				upgraded, err := upgrade(ctx, r, version, state)
				if err != nil {
					t.Fatalf("a state of %s written at version %d: %v", name, version, err)
				}
				for _, err := range carriedOver(ctx, resourceSchema(ctx, r), block.sample(t), upgraded) {
					t.Errorf("a state of %s written at version %d: %v", name, version, err)
				}
			})
		}
	}

	// What the check catches: an attribute of the earlier state that the schema no longer has
	// (the upgrade drops it, as the framework does with attributes it does not know).
	r := resources["liqo_tenant_namespace"]
	sample := recordedShapes(t, 0)["liqo_tenant_namespace"].sample(t)
	sample["renamed_attribute"] = "x"
	state, _ := json.Marshal(sample)
	upgraded, err := upgrade(ctx, r, 0, state)
	if err != nil {
		t.Fatalf("upgrading a state with an attribute the schema lacks: %v, want it dropped", err)
	}
	errs := carriedOver(ctx, resourceSchema(ctx, r), sample, upgraded)
	if len(errs) != 1 || !regexp.MustCompile(`renamed_attribute is not in the current schema`).MatchString(errs[0].Error()) {
		t.Errorf("checking a state with an attribute the schema lacks: %v, want one error naming it", errs)
	}
}
