package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Resource identity (Terraform >= 1.12): every managed resource of the provider has one, so that
// an import block can name an object with `identity = {...}` instead of an ID. An identity is
// made of the parts of the resource's import ID, each a string attribute of the state of the same
// name that replaces the resource when it changes: so the identity never changes for the life of
// the object.
var (
	_ resource.ResourceWithIdentity = (*tenantNamespaceResource)(nil)
	_ resource.ResourceWithIdentity = (*gatewayKeysResource)(nil)
	_ resource.ResourceWithIdentity = (*publicKeyResource)(nil)
	_ resource.ResourceWithIdentity = (*gatewayServerResource)(nil)
	_ resource.ResourceWithIdentity = (*gatewayClientResource)(nil)
	_ resource.ResourceWithIdentity = (*networkConfigurationResource)(nil)
	_ resource.ResourceWithIdentity = (*tenantResource)(nil)
	_ resource.ResourceWithIdentity = (*identityResource)(nil)
	_ resource.ResourceWithIdentity = (*consumerIdentityResource)(nil)
	_ resource.ResourceWithIdentity = (*resourceSliceResource)(nil)
	_ resource.ResourceWithIdentity = (*namespaceOffloadingResource)(nil)
	_ resource.ResourceWithIdentity = (*peeringResource)(nil)
)

// identitySchemaVersion is the version of every identity schema of the provider.
const identitySchemaVersion = 0

// identityAttribute is an attribute of a resource identity: the string attribute of the state of
// the same name.
type identityAttribute struct {
	name string
	// optional attributes may be left out (null) of an import block's identity, as of the import ID.
	optional    bool
	description string
}

// stateIdentity is a resource identity: attributes of the state, in the order of the parts of the
// resource's import ID.
type stateIdentity []identityAttribute

// objectIdentityParts describes the parts of objectIdentity that name the object.
var objectIdentityParts = map[string]string{
	"namespace": "Namespace of the object.",
	"name":      "Name of the object.",
}

// objectIdentity is the identity of a resource that manages an object in one cluster: `cluster`
// and the parts that name the object (namespace, name or both), as in its import ID.
func objectIdentity(parts ...string) stateIdentity {
	id := stateIdentity{{name: "cluster", optional: true, description: "Key of the provider's `clusters` map naming " +
		"the cluster of the object; left out (null) for the provider block's own connection."}}
	for _, p := range parts {
		id = append(id, identityAttribute{name: p, description: objectIdentityParts[p]})
	}
	return id
}

// namedObjectIdentity is the identity of a resource that manages a namespaced object.
var namedObjectIdentity = objectIdentity("namespace", "name")

// objectIDParts splits an object's import ID (parseObjectID) into the values of
// objectIdentity("namespace", "name") or, when the object is not namespaced, of
// objectIdentity("name").
func objectIDParts(namespaced bool) func(id string) ([]string, error) {
	return func(id string) ([]string, error) {
		cluster, namespace, name, err := parseObjectID(id, namespaced)
		if !namespaced {
			return []string{cluster, name}, err
		}
		return []string{cluster, namespace, name}, err
	}
}

// schema is the identity schema.
func (s stateIdentity) schema() identityschema.Schema {
	attrs := make(map[string]identityschema.Attribute, len(s))
	for _, a := range s {
		attrs[a.name] = identityschema.StringAttribute{
			RequiredForImport: !a.optional, OptionalForImport: a.optional, Description: a.description,
		}
	}
	return identityschema.Schema{Version: identitySchemaVersion, Attributes: attrs}
}

// record sets identity from the state (in Create, Read, Update and ImportState): nothing when no
// state was saved, or when the resource has no identity (the framework then passes none).
func (s stateIdentity) record(ctx context.Context, state *tfsdk.State, identity *tfsdk.ResourceIdentity, diags *diag.Diagnostics) {
	if identity == nil || state.Raw.IsNull() {
		return
	}
	for _, a := range s {
		var v types.String
		diags.Append(state.GetAttribute(ctx, path.Root(a.name), &v)...)
		diags.Append(identity.SetAttribute(ctx, path.Root(a.name), v)...)
	}
}

// importTarget is what an import names: the values of the identity's attributes, by name, and
// the import ID (made of the values when the import gives an identity).
type importTarget struct {
	id     string
	values map[string]types.String
}

// value is the value of the identity's attribute name (null when it has none).
func (t importTarget) value(name string) types.String { return t.values[name] }

// target reads what an import names: the identity of an import block with `identity`, or the ID,
// which parseID splits into the values of the attributes, in order ("" for an optional one
// left out).
func (s stateIdentity) target(ctx context.Context, req resource.ImportStateRequest, parseID func(string) ([]string, error)) (importTarget, error) {
	t := importTarget{id: req.ID, values: map[string]types.String{}}
	if req.Identity == nil || req.Identity.Raw.IsNull() {
		parts, err := parseID(req.ID)
		if err != nil {
			return t, err
		}
		if len(parts) != len(s) {
			return t, fmt.Errorf("import ID %q: %d parts, want %d", req.ID, len(parts), len(s))
		}
		for i, a := range s {
			t.values[a.name] = types.StringValue(parts[i])
			if a.optional {
				t.values[a.name] = stringOrNull(parts[i])
			}
		}
		return t, nil
	}
	var parts []string
	for _, a := range s {
		var v types.String
		if err := diagsError(req.Identity.GetAttribute(ctx, path.Root(a.name), &v)); err != nil {
			return t, fmt.Errorf("reading the identity's %s: %w", a.name, err)
		}
		if !a.optional && v.ValueString() == "" {
			return t, fmt.Errorf("the identity's %s is empty", a.name)
		}
		t.values[a.name] = v
		if v.ValueString() != "" {
			parts = append(parts, v.ValueString())
		}
	}
	t.id = strings.Join(parts, "/")
	return t, nil
}

// save writes what an import names into its state (`id` and the identity's attributes: the
// resource's Read does the rest) and its identity.
func (s stateIdentity) save(ctx context.Context, t importTarget, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), t.id)...)
	for _, a := range s {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(a.name), t.values[a.name])...)
	}
	s.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
}

// importState imports a resource that the identity's attributes name, as they are: its Read
// checks what they name. Errors are reported under summary.
func (s stateIdentity) importState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse,
	summary string, parseID func(string) ([]string, error),
) {
	t, err := s.target(ctx, req, parseID)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	s.save(ctx, t, resp)
}
