package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// An import cannot read a resource's timeouts (they are not in the clusters), so the first plan
// after importing a configuration that has a timeouts block shows them as a change. Such a plan
// keeps the state's status, rather than planning it anew, and its apply only records the new
// timeouts: nothing of the peering changes.

// onlyTimeoutsChange tells whether plan differs from state in timeouts, and in nothing else once
// the planned status is taken as the state's (the framework plans a computed attribute unknown
// when anything changes). A plan that differs in its status alone is a repair (ModifyPlan
// plans the status unknown when a module is not up), never this.
func onlyTimeoutsChange(ctx context.Context, plan tfsdk.Plan, state tfsdk.State) (bool, diag.Diagnostics) {
	if plan.Raw.IsNull() || state.Raw.IsNull() || plan.Raw.Equal(state.Raw) {
		return false, nil
	}
	var diags diag.Diagnostics
	probe := tfsdk.Plan{Schema: plan.Schema, Raw: plan.Raw.Copy()}
	var status types.Object
	var limits, planned timeouts.Value
	diags.Append(state.GetAttribute(ctx, path.Root("status"), &status)...)
	diags.Append(state.GetAttribute(ctx, path.Root("timeouts"), &limits)...)
	diags.Append(plan.GetAttribute(ctx, path.Root("timeouts"), &planned)...)
	if diags.HasError() || planned.Equal(limits) {
		// Same timeouts: what differs is the status alone, planned unknown by a repair.
		return false, diags
	}
	diags.Append(probe.SetAttribute(ctx, path.Root("status"), status)...)
	diags.Append(probe.SetAttribute(ctx, path.Root("timeouts"), limits)...)
	return !diags.HasError() && probe.Raw.Equal(state.Raw), diags
}

// planTimeoutsOnly keeps the state's status in a plan that changes nothing but timeouts.
func planTimeoutsOnly(ctx context.Context, state tfsdk.State, resp *resource.ModifyPlanResponse) {
	only, d := onlyTimeoutsChange(ctx, resp.Plan, state)
	resp.Diagnostics.Append(d...)
	if !only {
		return
	}
	var status types.Object
	resp.Diagnostics.Append(state.GetAttribute(ctx, path.Root("status"), &status)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("status"), status)...)
}
