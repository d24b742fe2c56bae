package provider

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/cidr"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/remap"
)

const networkConfigurationModule = "liqo_network_configuration"

var _ resource.ResourceWithValidateConfig = (*networkConfigurationResource)(nil)

// networkConfigurationResource manages a Configuration: the peer's pod and external CIDRs.
type networkConfigurationResource struct {
	objectResource[networkConfigurationModel, *networkConfigurationModel, *networkingv1beta1.Configuration]
}

type networkConfigurationModel struct {
	namespacedObject
	RemoteClusterID       types.String `tfsdk:"remote_cluster_id"`
	RemotePodCIDRs        types.List   `tfsdk:"remote_pod_cidrs"`
	RemoteExternalCIDRs   types.List   `tfsdk:"remote_external_cidrs"`
	WaitForRemap          types.Bool   `tfsdk:"wait_for_remap"`
	RemappedPodCIDRs      types.List   `tfsdk:"remapped_pod_cidrs"`
	RemappedExternalCIDRs types.List   `tfsdk:"remapped_external_cidrs"`
}

func newNetworkConfigurationResource() resource.Resource {
	r := &networkConfigurationResource{}
	r.objectKind = objectKind[networkConfigurationModel, *networkingv1beta1.Configuration]{
		typeName: "_network_configuration",
		kind:     "Configuration", noun: "network Configuration", needLiqo: true, namespaced: true, timeout: 5 * time.Minute,
		build:   fromPlan((*networkConfigurationModel).apply),
		read:    intoState((*networkConfigurationModel).read),
		written: networkConfigurationWritten,
		// An update that did not change the CIDRs kept the reported remapping.
		kept: func(plan *networkConfigurationModel) bool {
			return !plan.RemappedPodCIDRs.IsUnknown() && !plan.RemappedExternalCIDRs.IsUnknown()
		},
		waits: func(plan *networkConfigurationModel) bool { return plan.WaitForRemap.ValueBool() },
		wait:  networkConfigurationWaitRemap,
	}
	return r
}

// Schema describes liqo_network_configuration.
func (r *networkConfigurationResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	cidrList := func(required bool, desc string) schema.ListAttribute {
		a := schema.ListAttribute{
			ElementType: types.StringType, MarkdownDescription: desc,
			Validators: []validator.List{listvalidator.ValueStringsAre(cidrValidator()), listvalidator.UniqueValues()},
		}
		if required {
			a.Required = true
			a.Validators = append(a.Validators, listvalidator.SizeAtLeast(1))
		} else {
			a.Optional = true
		}
		return a
	}
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/name", timeouts.Opts{Create: true, Update: true, Delete: true},
		"The network configuration of the peer, as this cluster must know it: a `Configuration` "+
			"(networking.liqo.io/v1beta1) in the tenant namespace, labelled `liqo.io/remote-cluster-id`, holding the "+
			"peer's pod and external CIDRs (get them from the peer's `liqo_cluster` data source). Each cluster of a "+
			"peering has one with the other's CIDRs. When the peer's networks overlap local ones, the liqo controllers "+
			"remap them and report the result (`remapped_*`); set `wait_for_remap` to wait for it.",
		map[string]schema.Attribute{
			"namespace": nwNamespaceAttribute(),
			"name": derivedDefaultString("Name of the Configuration; default: the `remote_cluster_id`. Changing it "+
				"replaces the object.", nwNameValidator()),
			"remote_cluster_id": nwRemoteClusterIDAttribute(true),
			"remote_pod_cidrs": cidrList(true, "The peer's pod CIDRs (`spec.remote.cidr.pod`), at least one, e.g. "+
				"`[\"10.243.0.0/16\"]`. Changing them updates the object in place (and the remapping)."),
			"remote_external_cidrs": cidrList(false, "The peer's external CIDRs (`spec.remote.cidr.external`), e.g. "+
				"`[\"10.70.0.0/16\"]`. Changing them updates the object in place (and the remapping)."),
			"wait_for_remap": flagAttribute(false, "Wait, on create and when the CIDRs change, until the liqo controllers "+
				"report the remapped CIDRs (bounded by `timeouts`); default: `false`. The object is in the state before the "+
				"wait starts, so a timeout leaves it managed (tainted). The wait ends when the status lists as many CIDRs "+
				"as the spec and its conditions (when they carry an observed generation) are not older than the object."),
			"remapped_pod_cidrs": computedStringList("The peer's pod CIDRs as this cluster sees them after remapping " +
				"(`status.remote.cidr.pod`); null until the controllers report them."),
			"remapped_external_cidrs": computedStringList("The peer's external CIDRs as this cluster sees them after " +
				"remapping (`status.remote.cidr.external`); null until the controllers report them (or when there are none)."),
		})
}

// ValidateConfig refuses remote CIDRs that overlap one another: a pod CIDR inside another, or
// inside the external CIDR. The controllers would remap each into its own range, and traffic for
// the addresses both cover would go to whichever came first, silently.
func (r *networkConfigurationResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var cfg networkConfigurationModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	type named struct {
		attr   string
		prefix netip.Prefix
	}
	var all []named
	for _, l := range []struct {
		attr string
		list types.List
	}{{"remote_pod_cidrs", cfg.RemotePodCIDRs}, {"remote_external_cidrs", cfg.RemoteExternalCIDRs}} {
		if l.list.IsNull() || l.list.IsUnknown() {
			continue
		}
		for _, e := range l.list.Elements() {
			s, ok := e.(types.String)
			if !ok || s.IsNull() || s.IsUnknown() {
				continue
			}
			if p, err := netip.ParsePrefix(s.ValueString()); err == nil { // the list's validator reports a bad one
				all = append(all, named{l.attr, p.Masked()})
			}
		}
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.prefix == b.prefix && a.attr == b.attr {
				continue // a duplicate: the list's UniqueValues reports it
			}
			if a.prefix.Overlaps(b.prefix) {
				resp.Diagnostics.AddAttributeError(path.Root(b.attr), "Overlapping remote CIDRs",
					fmt.Sprintf("%s %s overlaps %s %s: the peer's networks cannot share addresses (the controllers would remap "+
						"each into a range of its own and send what both cover to one of them). List each network once, "+
						"with the peer's real, disjoint CIDRs (its liqo_cluster data source).", a.attr, a.prefix, b.attr, b.prefix))
			}
		}
	}
}

// ModifyPlan shows the default name and keeps the remapped CIDRs when the CIDRs they come from
// do not change.
func (r *networkConfigurationResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	plan, ok := plannedModel[networkConfigurationModel](ctx, &r.clusterResource, req, resp)
	if !ok {
		return
	}
	planDerivedDefault(ctx, resp, "name", plan.Name, plan.RemoteClusterID, sameValue)
	state, ok := priorModel[networkConfigurationModel](ctx, req, resp)
	if !ok {
		return
	}
	if plan.RemotePodCIDRs.Equal(state.RemotePodCIDRs) && !state.RemappedPodCIDRs.IsNull() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("remapped_pod_cidrs"), state.RemappedPodCIDRs)...)
	}
	if plan.RemoteExternalCIDRs.Equal(state.RemoteExternalCIDRs) && !state.RemappedExternalCIDRs.IsNull() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("remapped_external_cidrs"), state.RemappedExternalCIDRs)...)
	}
}

// apply writes the model into the object's labels and spec.
func (m *networkConfigurationModel) apply(ctx context.Context, conf *networkingv1beta1.Configuration) diag.Diagnostics {
	pod, d := nwListStrings(ctx, m.RemotePodCIDRs)
	ext, d2 := nwListStrings(ctx, m.RemoteExternalCIDRs)
	forge.MutateConfiguration(conf, m.RemoteClusterID.ValueString(), pod, ext)
	return append(d, d2...)
}

// read sets the model from the object.
func (m *networkConfigurationModel) read(ctx context.Context, c *clusterClient, conf *networkingv1beta1.Configuration) diag.Diagnostics {
	var diags diag.Diagnostics
	m.ID = types.StringValue(objectID(c.name, conf.Namespace, conf.Name))
	m.RemoteClusterID = types.StringValue(conf.Labels[consts.RemoteClusterIDLabel])
	pod, d := nwStringList(ctx, cidr.Strings(conf.Spec.Remote.CIDR.Pod))
	diags.Append(d...)
	m.RemotePodCIDRs = pod
	// An empty external list and no list are the same to the API: keep the configured form.
	switch ext := conf.Spec.Remote.CIDR.External; {
	case len(ext) > 0:
		l, d := types.ListValueFrom(ctx, types.StringType, cidr.Strings(ext))
		diags.Append(d...)
		m.RemoteExternalCIDRs = l
	case !m.RemoteExternalCIDRs.IsNull() && !m.RemoteExternalCIDRs.IsUnknown() && len(m.RemoteExternalCIDRs.Elements()) == 0:
		// configured as [], kept
	default:
		m.RemoteExternalCIDRs = types.ListNull(types.StringType)
	}
	if m.WaitForRemap.IsNull() || m.WaitForRemap.IsUnknown() {
		m.WaitForRemap = types.BoolValue(false)
	}
	diags.Append(m.readStatus(ctx, conf)...)
	return diags
}

// readStatus sets the remapped CIDRs from the status; null when not reported.
func (m *networkConfigurationModel) readStatus(ctx context.Context, conf *networkingv1beta1.Configuration) diag.Diagnostics {
	var pod, ext []string
	if conf.Status.Remote != nil {
		pod = cidr.Strings(conf.Status.Remote.CIDR.Pod)
		ext = cidr.Strings(conf.Status.Remote.CIDR.External)
	}
	var diags diag.Diagnostics
	var d diag.Diagnostics
	m.RemappedPodCIDRs, d = nwStringList(ctx, pod)
	diags.Append(d...)
	m.RemappedExternalCIDRs, d = nwStringList(ctx, ext)
	diags.Append(d...)
	return diags
}

// networkConfigurationWaitRemap waits until the controllers report the remapping of every CIDR.
func networkConfigurationWaitRemap(ctx context.Context, c *clusterClient, _ *networkConfigurationModel, conf *networkingv1beta1.Configuration,
	timeout time.Duration, _ string,
) (*networkingv1beta1.Configuration, error) {
	var got *networkingv1beta1.Configuration
	err := nwWait(ctx, c, networkConfigurationModule, "Configuration", conf, timeout, "the remapped CIDRs (status.remote.cidr) to be reported",
		"wait_for_remap", func(o client.Object) (bool, string) {
			cur := o.(*networkingv1beta1.Configuration)
			done, seen := remap.Remapped(cur)
			if done {
				got = cur
			}
			return done, seen
		})
	return got, err
}

// networkConfigurationWritten sets the remapped lists that the plan left unknown (all on
// create; on update, those whose CIDRs changed) from the status; the others keep the state's.
func networkConfigurationWritten(ctx context.Context, _ *clusterClient, plan *networkConfigurationModel, conf *networkingv1beta1.Configuration) error {
	var fresh networkConfigurationModel
	if err := diagsError(fresh.readStatus(ctx, conf)); err != nil {
		return err
	}
	if plan.RemappedPodCIDRs.IsUnknown() {
		plan.RemappedPodCIDRs = fresh.RemappedPodCIDRs
	}
	if plan.RemappedExternalCIDRs.IsUnknown() {
		plan.RemappedExternalCIDRs = fresh.RemappedExternalCIDRs
	}
	return nil
}
