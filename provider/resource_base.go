package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clusterUser is embedded by the resources and data sources: it holds the provider's cluster
// set, which the provider's Configure makes, and gives the client of a cluster of it.
type clusterUser struct {
	clusters *clusterSet
}

// configure receives the cluster set from a Configure request's provider data (nil during
// validation, before the provider is configured).
func (u *clusterUser) configure(providerData any, diags *diag.Diagnostics) {
	if providerData == nil {
		return
	}
	set, ok := providerData.(*clusterSet)
	if !ok {
		diags.AddError("Unexpected provider data", fmt.Sprintf("got %T, want *clusterSet", providerData))
		return
	}
	u.clusters = set
}

// client returns the client of the cluster named by a `cluster` attribute; needLiqo also checks
// that our API is installed there.
func (u *clusterUser) client(ctx context.Context, cluster types.String, needLiqo bool) (*clusterClient, error) {
	if u.clusters == nil {
		return nil, fmt.Errorf("the liqo provider is not configured")
	}
	if needLiqo {
		return u.clusters.getWithLiqo(ctx, cluster.ValueString())
	}
	return u.clusters.get(ctx, cluster.ValueString())
}

// clusterResource is embedded by the resources that live in one cluster: it receives the
// provider's cluster set and resolves the `cluster` attribute.
type clusterResource struct {
	clusterUser
}

// Configure receives the cluster set made by the provider's Configure.
func (r *clusterResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.configure(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan checks at plan time, without contacting any cluster, that the `cluster`
// attribute names a key of the provider's clusters map (or that the provider block has a
// connection of its own when it is not set). When that cluster cannot be reached before apply
// (its connection depends on a resource not created yet) and Terraform allows deferred changes,
// it defers the resource to a later plan. Resources with their own ModifyPlan call it first.
func (r *clusterResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.clusters == nil {
		return // destroy, or the provider is not configured yet
	}
	var cluster types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("cluster"), &cluster)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if resp.Deferred = r.clusters.deferral(req.ClientCapabilities.DeferralAllowed, cluster).resource(); resp.Deferred != nil || cluster.IsUnknown() {
		return
	}
	if _, err := r.clusters.lookup(cluster.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("cluster"), "Unknown cluster", err.Error())
	}
}

// modelOf reads a request's plan, state or configuration (from) into a model; ok is false on an
// error (in diags).
func modelOf[M any](ctx context.Context, from interface {
	Get(ctx context.Context, target any) diag.Diagnostics
}, diags *diag.Diagnostics,
) (m M, ok bool) {
	diags.Append(from.Get(ctx, &m)...)
	return m, !diags.HasError()
}

// plannedModel runs clusterResource's ModifyPlan checks and reads the plan; ok is false when
// there is nothing more to plan: a destroy, or an error (in resp).
func plannedModel[M any](ctx context.Context, r *clusterResource, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) (plan M, ok bool) {
	r.ModifyPlan(ctx, req, resp)
	if req.Plan.Raw.IsNull() || resp.Diagnostics.HasError() || resp.Deferred != nil {
		return plan, false
	}
	return modelOf[M](ctx, req.Plan, &resp.Diagnostics)
}

// priorModel reads the state of a ModifyPlan request; ok is false on create (no state) or an
// error (in resp).
func priorModel[M any](ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) (state M, ok bool) {
	if req.State.Raw.IsNull() {
		return state, false
	}
	return modelOf[M](ctx, req.State, &resp.Diagnostics)
}

// planDerivedDefault shows in the plan the default of the attribute attr, derived from the
// attribute it follows: when attr is not configured (unknown in the plan) and from is known.
func planDerivedDefault(ctx context.Context, resp *resource.ModifyPlanResponse, attr string, current, from types.String, derive func(string) string) {
	if !current.IsUnknown() || from.IsUnknown() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(attr), derive(from.ValueString()))...)
}

// sameValue derives a default equal to the attribute it follows.
func sameValue(s string) string { return s }

// objectID builds the ID `[cluster/][namespace/]name`.
func objectID(cluster, namespace, name string) string {
	parts := []string{}
	if cluster != "" {
		parts = append(parts, cluster)
	}
	if namespace != "" {
		parts = append(parts, namespace)
	}
	return strings.Join(append(parts, name), "/")
}

// parseObjectID splits an import ID: `[cluster/]namespace/name` for a namespaced object,
// `[cluster/]name` for a cluster-scoped one.
func parseObjectID(id string, namespaced bool) (cluster, namespace, name string, err error) {
	parts := strings.Split(id, "/")
	for _, p := range parts {
		if p == "" {
			return "", "", "", fmt.Errorf("import ID %q has an empty part", id)
		}
	}
	switch {
	case namespaced && len(parts) == 2:
		return "", parts[0], parts[1], nil
	case namespaced && len(parts) == 3:
		return parts[0], parts[1], parts[2], nil
	case !namespaced && len(parts) == 1:
		return "", "", parts[0], nil
	case !namespaced && len(parts) == 2:
		return parts[0], "", parts[1], nil
	}
	if namespaced {
		return "", "", "", fmt.Errorf("import ID %q is not `[cluster/]namespace/name`", id)
	}
	return "", "", "", fmt.Errorf("import ID %q is not `[cluster/]name`", id)
}

// stringOrNull is a types.String that is null for "".
func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// patchObject reads obj (of kind, for messages) at key in the cluster, lets mutate change it,
// and patches the change in. Errors name the kind, the object and the cluster.
func patchObject(ctx context.Context, c *clusterClient, kind string, key client.ObjectKey, obj client.Object, mutate func() error) error {
	ref := objectID("", key.Namespace, key.Name)
	if err := c.ctrl.Get(ctx, key, obj); err != nil {
		return fmt.Errorf("reading %s %s in %s: %w", kind, ref, c.describe(), err)
	}
	before, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %s %s: unexpected %T", kind, ref, obj)
	}
	if err := mutate(); err != nil {
		return fmt.Errorf("%s %s: %w", kind, ref, err)
	}
	if err := c.ctrl.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patching %s %s in %s: %w", kind, ref, c.describe(), err)
	}
	return nil
}

// diagsError turns error diagnostics into one error, for mutate functions.
func diagsError(d diag.Diagnostics) error {
	if !d.HasError() {
		return nil
	}
	var msgs []string
	for _, e := range d.Errors() {
		msgs = append(msgs, e.Summary()+": "+e.Detail())
	}
	return errors.New(strings.Join(msgs, "; "))
}

// readObject reads obj (of kind, for messages) at key for a resource's Read. found is false when
// the object is gone or being deleted: the resource then leaves the state, and the next plan
// creates it again.
func readObject(ctx context.Context, c *clusterClient, kind string, key client.ObjectKey, obj client.Object) (found bool, err error) {
	err = c.ctrl.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) || err == nil && obj.GetDeletionTimestamp() != nil {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s %s in %s: %w", kind, objectID("", key.Namespace, key.Name), c.describe(), err)
	}
	return true, nil
}

// objectSchema is the schema of a resource that manages objects in one cluster: its own
// attributes plus `id` (the import ID of the form idForm), `cluster` and the `timeouts` block.
func objectSchema(ctx context.Context, idForm string, opts timeouts.Opts, description string, attributes map[string]schema.Attribute) schema.Schema {
	attributes["id"] = idAttribute(idForm)
	attributes["cluster"] = clusterAttribute()
	return schema.Schema{
		Version:             resourceSchemaVersion,
		MarkdownDescription: description,
		Attributes:          attributes,
		Blocks:              map[string]schema.Block{"timeouts": timeouts.Block(ctx, opts)},
	}
}
