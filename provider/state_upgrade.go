package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Versions of the resources' state. Every resource's schema has version resourceSchemaVersion,
// and every resource can read the state of each earlier version (UpgradeState), so that a state
// written by any release of the provider keeps working:
//
//   - 0: the shape of the releases before schema versions (no resource identity);
//     provider/testdata/schema-v0.json records its last form (liqo_peering's status.latency was
//     dropped before, and the upgrader drops it).
//   - 1: the same attributes, with a resource identity.
//
// A change that renames, removes or retypes an attribute raises resourceSchemaVersion and adds,
// for each earlier version, the step to the new shape (stateUpgrades); the tests read the
// recorded shape of every earlier version through the upgraders (state_upgrade_test.go).
const resourceSchemaVersion = 1

var (
	_ resource.ResourceWithUpgradeState = (*tenantNamespaceResource)(nil)
	_ resource.ResourceWithUpgradeState = (*identityResource)(nil)
	_ resource.ResourceWithUpgradeState = (*consumerIdentityResource)(nil)
	_ resource.ResourceWithUpgradeState = (*peeringResource)(nil)
)

// stateUpgrades are the upgraders of every resource, from each earlier version of the state to
// the current one.
func stateUpgrades() map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{
		// Version 1 added no attribute and changed none: the state carries over as it is.
		0: {StateUpgrader: carryOver},
	}
}

// UpgradeState upgrades the state of a resource living in one cluster written by an earlier
// version of the provider.
func (r *clusterResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return stateUpgrades()
}

// UpgradeState upgrades liqo_peering's state written by an earlier version of the provider.
func (r *peeringResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return stateUpgrades()
}

// carryOver is the upgrader of a version whose state has the current attributes: it decodes the
// state with the current schema, dropping what the schema no longer has, as the framework does
// for a state of the current version. Version 0's states need it: liqo_peering's status.latency
// was dropped from the schema without a new version, and states of the releases before still
// hold it.
func carryOver(ctx context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	if req.RawState == nil || req.RawState.JSON == nil {
		resp.Diagnostics.AddError("Upgrading the resource's state",
			"the state holds no JSON (a state written by a provider built on the legacy SDK?): this provider never wrote "+
				"such a state; remove the resource from the state (terraform state rm) and import it")
		return
	}
	state, err := req.RawState.UnmarshalWithOpts(resp.State.Schema.Type().TerraformType(ctx),
		tfprotov6.UnmarshalOpts{ValueFromJSONOpts: tftypes.ValueFromJSONOpts{IgnoreUndefinedAttributes: true}})
	if err != nil {
		resp.Diagnostics.AddError("Upgrading the resource's state", fmt.Sprintf("reading the state written by an earlier "+
			"version of the provider: %v; remove the resource from the state (terraform state rm) and import it", err))
		return
	}
	resp.State.Raw = state
}
