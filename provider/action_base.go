package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/action/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The actions: day-2 operations invoked with `terraform apply -invoke=action.<type>.<name>` or
// from a resource's lifecycle `action_trigger` (Terraform >= 1.14). They change or check the
// clusters and report what they did through progress messages; they have no state.

// providerActions lists the provider's actions.
func providerActions() []func() action.Action {
	return []func() action.Action{newTenantCordonAction, newConsumerIdentityRenewAction, newPeeringTestAction}
}

// clusterAction is embedded by the actions: it receives the provider's cluster set and checks,
// at plan time, the attributes of its configuration that name clusters.
type clusterAction struct {
	clusterUser
	// clusterAttrs are the attributes that hold keys of the provider's clusters map (null:
	// the provider block's own connection).
	clusterAttrs []string
}

// Configure receives the cluster set made by the provider's Configure.
func (a *clusterAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.configure(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan checks at plan time, without contacting any cluster, that each cluster attribute
// names a key of the provider's clusters map (or, when null, that the provider block has a
// connection of its own).
func (a *clusterAction) ModifyPlan(ctx context.Context, req action.ModifyPlanRequest, resp *action.ModifyPlanResponse) {
	if a.clusters == nil {
		return // the provider is not configured yet
	}
	for _, attr := range a.clusterAttrs {
		var key types.String
		resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root(attr), &key)...)
		if resp.Diagnostics.HasError() || key.IsUnknown() {
			continue
		}
		if _, err := a.clusters.lookup(key.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root(attr), "Unknown cluster", err.Error())
		}
	}
}

// actionClusterAttribute is an action's attribute naming a cluster of the provider: required
// for those with no default, else optional (the provider block's own connection).
func actionClusterAttribute(required bool, description string) schema.StringAttribute {
	return schema.StringAttribute{Required: required, Optional: !required, MarkdownDescription: description}
}

// actionSchema is the schema of an action: its attributes and the `timeouts` block, whose
// `invoke` bounds the invocation (def when unset).
func actionSchema(ctx context.Context, def time.Duration, description string, attributes map[string]schema.Attribute) schema.Schema {
	return schema.Schema{
		MarkdownDescription: description,
		Attributes:          attributes,
		Blocks: map[string]schema.Block{"timeouts": timeouts.BlockWithOpts(ctx, timeouts.Opts{
			InvokeDescription: fmt.Sprintf("How long the invocation may take, as a duration such as `90s` or `5m`; default `%s`.", def),
		})},
	}
}

// invocationContext bounds an invocation by its `timeouts.invoke` (def when unset): the context
// it returns ends then; cancel it when the invocation ends. ok is false, with the diagnostics in
// resp, when the configuration does not hold a timeout.
func invocationContext(ctx context.Context, t timeouts.Value, def time.Duration, resp *action.InvokeResponse) (
	_ context.Context, cancel context.CancelFunc, timeout time.Duration, ok bool,
) {
	timeout, d := t.Invoke(ctx, def)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return ctx, func() {}, 0, false
	}
	ctx, cancel = context.WithTimeout(ctx, timeout)
	return ctx, cancel, timeout, true
}

// progress reports a step of an invocation to Terraform, which shows it as it happens.
func progress(resp *action.InvokeResponse, format string, args ...any) {
	if resp.SendProgress != nil {
		resp.SendProgress(action.InvokeProgressEvent{Message: fmt.Sprintf(format, args...)})
	}
}

// observation is what an invocation's wait sees at one look: whether it is over, and in words
// what it sees (reported as progress when it changes, and in the error on timeout).
type observation struct {
	done bool
	seen string
}

// awaitReporting looks with observe every interval until it reports done, the context ends or
// timeout passes; each new description is sent as progress. On timeout, the error says what it
// waited for and what it saw last; an error of observe ends the wait at once.
func awaitReporting(ctx context.Context, resp *action.InvokeResponse, interval, timeout time.Duration, what string,
	observe func(ctx context.Context) (observation, error),
) error {
	last := "nothing yet"
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		o, err := observe(ctx)
		if err != nil {
			return false, err
		}
		if o.seen != last {
			last = o.seen
			progress(resp, "%s", o.seen)
		}
		return o.done, nil
	})
	switch {
	case wait.Interrupted(err):
		return fmt.Errorf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
	case err != nil:
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}
