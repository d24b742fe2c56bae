package provider

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// List resources (Terraform >= 1.14, `terraform query`): each lists the objects of one managed
// resource type, under that type's name. A result carries the managed resource's identity, the
// one an import block by identity gives, and, with include_resource (or
// -generate-config-out), the state that import would read: so a query can generate the import
// blocks and the configuration of objects made outside Terraform (e.g. by liqoctl) in bulk.

// listResources lists the provider's list resources.
func listResources() []func() list.ListResource {
	return []func() list.ListResource{newPeeringList, newTenantList, newResourceSliceList, newNamespaceOffloadingList}
}

// listUser is embedded by the list resources: the cluster set, received as the resources
// receive it.
type listUser struct {
	clusterUser
}

// Configure receives the cluster set made by the provider's Configure.
func (u *listUser) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	u.configure(req.ProviderData, &resp.Diagnostics)
}

// listClusterAttribute is the `cluster` attribute of a list block's config.
func listClusterAttribute(what string) listschema.StringAttribute {
	return listschema.StringAttribute{
		Optional: true,
		MarkdownDescription: "Key of the provider's `clusters` map naming the cluster to list the " + what + " of; default: " +
			"the provider block's own connection. It is the `cluster` of the results' identities.",
	}
}

// listClusterError explains an error getting the cluster that the config's attribute attr names
// (key, "" when it is not set).
func listClusterError(attr, key string, err error) string {
	if key == "" {
		return fmt.Sprintf("config.%s is not set, so the list reads the provider block's own connection: %v", attr, err)
	}
	return fmt.Sprintf("config.%s = %q: %v", attr, key, err)
}

// configString reads the string attribute name of a list block's config ("" when null).
func configString(ctx context.Context, config tfsdk.Config, name string, diags *diag.Diagnostics) string {
	var v types.String
	diags.Append(config.GetAttribute(ctx, path.Root(name), &v)...)
	return v.ValueString()
}

// targetOf is what an import by identity of the values (by attribute name; others are
// ignored) names: the values and the import ID they make.
func (s stateIdentity) targetOf(values map[string]types.String) importTarget {
	var parts []string
	for _, a := range s {
		if v := values[a.name].ValueString(); v != "" {
			parts = append(parts, v)
		}
	}
	return importTarget{id: strings.Join(parts, "/"), values: values}
}

// listed is the list result of the object t names, with its identity, and the state an import
// of t starts from (`id` and the identity's attributes; the resource's Read does the rest),
// which the caller completes and includes when the query asks for resources (include).
func (s stateIdentity) listed(ctx context.Context, req list.ListRequest, t importTarget, display string) (list.ListResult, tfsdk.State) {
	result := req.NewListResult(ctx)
	result.DisplayName = display
	imported := resource.ImportStateResponse{
		State:    tfsdk.State{Raw: result.Resource.Raw, Schema: result.Resource.Schema},
		Identity: result.Identity,
	}
	s.save(ctx, t, &imported)
	result.Diagnostics.Append(imported.Diagnostics...)
	return result, imported.State
}

// include sets the result's resource to state.
func include(result *list.ListResult, state tfsdk.State) {
	result.Resource = &tfsdk.Resource{Raw: state.Raw, Schema: state.Schema}
}

// listError is a stream of one error, reported under summary.
func listError(summary, detail string) iter.Seq[list.ListResult] {
	var diags diag.Diagnostics
	diags.AddError(summary, detail)
	return list.ListResultsStreamDiagnostics(diags)
}

// limited pushes at most limit results (all of them when limit is 0): it returns push's answer,
// false once the limit is reached.
func limited(limit int64, push func(list.ListResult) bool) func(list.ListResult) bool {
	var n int64
	return func(r list.ListResult) bool {
		if !push(r) {
			return false
		}
		if r.Diagnostics.HasError() {
			return true
		}
		n++
		return limit <= 0 || n < limit
	}
}
