package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

var _ resource.ResourceWithValidateConfig = (*peeringResource)(nil)

// peeringDefaultTimeout bounds create, update and delete unless timeouts says otherwise.
const peeringDefaultTimeout = 2 * time.Minute

// Gateway defaults, as `liqoctl peer` has them.
const (
	peeringDefaultServerLocation = string(corev1beta1.ProviderRole)
	peeringDefaultServiceType    = string(corev1.ServiceTypeLoadBalancer)
	peeringDefaultMTU            = 1340
)

// peeringResource is liqo_peering: the whole `liqoctl peer` flow between two clusters of the
// provider's clusters map, as one resource. It is a thin layer over internal/peering, which does
// every step idempotently; this file maps the schema to its Options and State.
type peeringResource struct {
	clusterUser
}

type peeringModel struct {
	quantitiesModel
	ID                      types.String   `tfsdk:"id"`
	ConsumerCluster         types.String   `tfsdk:"consumer_cluster"`
	ProviderCluster         types.String   `tfsdk:"provider_cluster"`
	Networking              types.Bool     `tfsdk:"networking"`
	InBand                  types.Bool     `tfsdk:"in_band"`
	CreateResourceSlice     types.Bool     `tfsdk:"create_resource_slice"`
	CreateVirtualNode       types.Bool     `tfsdk:"create_virtual_node"`
	ResourceSliceClass      types.String   `tfsdk:"resource_slice_class"`
	PodSecurity             types.String   `tfsdk:"pod_security"`
	Gateway                 types.Object   `tfsdk:"gateway"`
	Offer                   types.Object   `tfsdk:"offer"`
	ConsumerClusterID       types.String   `tfsdk:"consumer_cluster_id"`
	ProviderClusterID       types.String   `tfsdk:"provider_cluster_id"`
	ConsumerTenantNamespace types.String   `tfsdk:"consumer_tenant_namespace"`
	ProviderTenantNamespace types.String   `tfsdk:"provider_tenant_namespace"`
	VirtualNodeName         types.String   `tfsdk:"virtual_node_name"`
	Granted                 types.Map      `tfsdk:"granted"`
	Status                  types.Object   `tfsdk:"status"`
	Timeouts                timeouts.Value `tfsdk:"timeouts"`
}

type peeringGatewayModel struct {
	ServerLocation types.String `tfsdk:"server_location"`
	ServiceType    types.String `tfsdk:"service_type"`
	Port           types.Int64  `tfsdk:"port"`
	NodePort       types.Int64  `tfsdk:"node_port"`
	LoadBalancerIP types.String `tfsdk:"load_balancer_ip"`
	ClientAddress  types.String `tfsdk:"client_address"`
	ClientPort     types.Int64  `tfsdk:"client_port"`
	MTU            types.Int64  `tfsdk:"mtu"`
}

var peeringGatewayAttrTypes = map[string]attr.Type{
	"server_location": types.StringType, "service_type": types.StringType, "port": types.Int64Type, "node_port": types.Int64Type,
	"load_balancer_ip": types.StringType, "client_address": types.StringType, "client_port": types.Int64Type, "mtu": types.Int64Type,
}

// peeringServerLocations are the sides that can host the gateway server, the default first.
var peeringServerLocations = []string{string(corev1beta1.ProviderRole), string(corev1beta1.ConsumerRole)}

var peeringStatusAttrTypes = map[string]attr.Type{
	"networking": types.StringType, "authentication": types.StringType, "offloading": types.StringType,
}

// peeringDefaultGateway is the gateway attribute when it is not configured.
func peeringDefaultGateway() types.Object {
	return peeringGatewayOn(peeringDefaultServerLocation)
}

// peeringGatewayOn is the default gateway with the server on the given side.
func peeringGatewayOn(location string) types.Object {
	return types.ObjectValueMust(peeringGatewayAttrTypes, map[string]attr.Value{
		"server_location": types.StringValue(location),
		"service_type":    types.StringValue(peeringDefaultServiceType), "port": types.Int64Value(consts.DefaultGatewayPort),
		"node_port": types.Int64Null(), "load_balancer_ip": types.StringNull(), "client_address": types.StringNull(),
		"client_port": types.Int64Null(), "mtu": types.Int64Value(peeringDefaultMTU),
	})
}

func newPeeringResource() resource.Resource { return &peeringResource{} }

// peeringIdentity is the resource identity of liqo_peering: its two clusters, as in its import ID.
var peeringIdentity = stateIdentity{
	{name: "consumer_cluster", description: "Key of the provider's `clusters` map naming the consumer cluster."},
	{name: "provider_cluster", description: "Key of the provider's `clusters` map naming the provider cluster."},
}

// IdentitySchema describes the resource identity: the consumer and provider clusters.
func (r *peeringResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = peeringIdentity.schema()
}

// Metadata names the resource liqo_peering.
func (r *peeringResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_peering"
}

// Configure receives the cluster set made by the provider's Configure.
func (r *peeringResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.configure(req.ProviderData, &resp.Diagnostics)
}

func known(s types.String) bool { return !s.IsNull() && !s.IsUnknown() }

// ModifyPlan checks at plan time, without contacting the clusters, that both cluster keys are
// in the provider's clusters map; when they can be reached, that the gateway server's ports are
// free there (planGatewayPorts); keeps the grant in the plan when the requested resources do
// not change; and plans an in-place update when the last refresh found a module not up, so that
// apply runs the (idempotent) peering again and repairs it.
func (r *peeringResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.clusters == nil {
		return // destroy, or the provider is not configured yet
	}
	plan, ok := modelOf[peeringModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	if resp.Deferred = r.clusters.deferral(req.ClientCapabilities.DeferralAllowed, plan.ConsumerCluster, plan.ProviderCluster).resource(); resp.Deferred != nil {
		return // a cluster created in the same run: planned once it can be reached
	}
	for _, c := range []struct {
		attr string
		key  types.String
	}{{"consumer_cluster", plan.ConsumerCluster}, {"provider_cluster", plan.ProviderCluster}} {
		if !known(c.key) {
			continue
		}
		if c.key.ValueString() == "" {
			resp.Diagnostics.AddAttributeError(path.Root(c.attr), "Unknown cluster", c.attr+" is empty: name a key of the provider's clusters map")
			continue
		}
		if _, err := r.clusters.lookup(c.key.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root(c.attr), "Unknown cluster", err.Error())
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	if noNode := plan.CreateResourceSlice.Equal(types.BoolValue(false)) || plan.CreateVirtualNode.Equal(types.BoolValue(false)); noNode {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("virtual_node_name"), types.StringNull())...)
	}
	r.planGatewayPorts(ctx, &plan, req, resp)
	if req.State.Raw.IsNull() {
		return
	}
	state, ok := modelOf[peeringModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	want, err1 := plan.requested(ctx)
	had, err2 := state.requested(ctx)
	if err1 == nil && err2 == nil && plan.known() && equality.Semantic.DeepEqual(want, had) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("granted"), state.Granted)...)
	}
	if reason := state.unhealthy(); reason != "" && resp.Plan.Raw.Equal(req.State.Raw) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("status"), types.ObjectUnknown(peeringStatusAttrTypes))...)
		resp.Diagnostics.AddWarning("Peering not up: apply repairs it",
			fmt.Sprintf("liqo_peering %s: %s at the last refresh; applying runs the peering again, which recreates what is missing "+
				"and waits until every module is up.", state.ID.ValueString(), reason))
	} else if reason == "" {
		planTimeoutsOnly(ctx, req.State, resp)
	}
}

// unhealthy says which module of the recorded status is not up, or "".
func (m *peeringModel) unhealthy() string {
	if m.Status.IsNull() || m.Status.IsUnknown() {
		return ""
	}
	st := map[string]types.String{}
	for k, v := range m.Status.Attributes() {
		if s, ok := v.(types.String); ok {
			st[k] = s
		}
	}
	recorded := peering.State{Networking: st["networking"].ValueString(), Authentication: st["authentication"].ValueString(),
		Offloading: st["offloading"].ValueString()}
	return recorded.Down()
}

// options builds the library's options from the model.
func (m *peeringModel) options(ctx context.Context) (peering.Options, error) {
	res, err := m.requested(ctx)
	if err != nil {
		return peering.Options{}, err
	}
	opts := peering.Options{Networking: m.Networking.IsNull() || m.Networking.ValueBool(), Resources: res, InBand: m.InBand.ValueBool(),
		SliceClass:      authv1beta1.ResourceSliceClass(m.ResourceSliceClass.ValueString()),
		NoResourceSlice: !m.CreateResourceSlice.IsNull() && !m.CreateResourceSlice.ValueBool(),
		NoVirtualNode:   !m.CreateVirtualNode.IsNull() && !m.CreateVirtualNode.ValueBool(),
		PodSecurity:     m.PodSecurity.ValueString()}
	if opts.NoResourceSlice {
		opts.Resources = nil
	} else if opts.Offer, err = offerAccept(ctx, m.Offer); err != nil {
		return peering.Options{}, err
	}
	gwObj := m.Gateway
	if gwObj.IsNull() || gwObj.IsUnknown() {
		gwObj = peeringDefaultGateway()
	}
	var gw peeringGatewayModel
	if d := gwObj.As(ctx, &gw, basetypes.ObjectAsOptions{}); d.HasError() {
		return peering.Options{}, fmt.Errorf("reading gateway: %w", diagsError(d))
	}
	opts.Gateway = peering.Gateway{ServiceType: corev1.ServiceType(gw.ServiceType.ValueString()),
		ServerOnConsumer: gw.ServerLocation.ValueString() == string(corev1beta1.ConsumerRole),
		Port:             int32(gw.Port.ValueInt64()), MTU: int(gw.MTU.ValueInt64()), //nolint:gosec // validated to 1..65535
		NodePort: int32(gw.NodePort.ValueInt64()), ClientPort: int32(gw.ClientPort.ValueInt64()), //nolint:gosec // validated to 1..65535
		LoadBalancerIP: gw.LoadBalancerIP.ValueString(), ClientAddress: gw.ClientAddress.ValueString()}
	return opts, nil
}

// refresh sets the computed attributes from the observed state, and each requested resource
// from what the provider granted of it (keeping the configured spelling of equal quantities), so
// a grant that differs from the configuration shows as a difference. Resources the slice does
// not ask for are not requested ones, even when the provider grants them on its own (its
// defaultNodeResources): they show in granted only. A slice that asks for nothing (liqoctl's
// default) asks for whatever the provider grants.
func (m *peeringModel) refresh(ctx context.Context, st *peering.State) error {
	m.ID = types.StringValue(m.ConsumerCluster.ValueString() + "/" + m.ProviderCluster.ValueString())
	m.ConsumerClusterID = types.StringValue(string(st.ConsumerID))
	m.ProviderClusterID = types.StringValue(string(st.ProviderID))
	m.ConsumerTenantNamespace = types.StringValue(st.ConsumerTenantNamespace)
	m.ProviderTenantNamespace = types.StringValue(st.ProviderTenantNamespace)
	m.VirtualNodeName = stringOrNull(st.VirtualNode)
	gw, err := peeringGatewayRead(m.Gateway, st)
	if err != nil {
		return err
	}
	m.Gateway = gw
	if m.Networking.IsNull() || m.Networking.IsUnknown() {
		m.Networking = types.BoolValue(st.Networking != peering.StatusDisabled)
	}
	// Read back, so that a Tenant changed outside Terraform shows as a difference.
	m.InBand = types.BoolValue(st.ProxyURL != "")
	m.PodSecurity = stringOrNull(st.PodSecurity)
	// What the slice is: read back, so that a slice changed outside Terraform shows as a difference.
	m.CreateResourceSlice = types.BoolValue(st.ResourceSlice)
	if st.ResourceSlice {
		m.CreateVirtualNode = types.BoolValue(st.VirtualNodeWanted)
		class := st.SliceClass
		if class == authv1beta1.ResourceSliceClassUnknown {
			class = authv1beta1.ResourceSliceClassDefault
		}
		m.ResourceSliceClass = types.StringValue(string(class))
	} else {
		if m.CreateVirtualNode.IsNull() || m.CreateVirtualNode.IsUnknown() {
			m.CreateVirtualNode = types.BoolValue(true)
		}
		if m.ResourceSliceClass.IsNull() || m.ResourceSliceClass.IsUnknown() {
			m.ResourceSliceClass = types.StringValue(string(authv1beta1.ResourceSliceClassDefault))
		}
	}

	if err := m.set(ctx, st.Granted, func(name corev1.ResourceName) bool { return asks(st, name) }); err != nil {
		return err
	}
	granted, err := resourceListValue(ctx, st.Granted)
	if err != nil {
		return fmt.Errorf("building granted: %w", err)
	}
	m.Granted = granted
	status, d := types.ObjectValue(peeringStatusAttrTypes, map[string]attr.Value{
		"networking": types.StringValue(st.Networking), "authentication": types.StringValue(st.Authentication),
		"offloading": types.StringValue(st.Offloading),
	})
	if d.HasError() {
		return fmt.Errorf("building status: %w", diagsError(d))
	}
	m.Status = status
	return nil
}

// sides returns the two clusters of the model with clients, checking that our API is there.
func (r *peeringResource) sides(ctx context.Context, m *peeringModel) (consumer, provider peering.Cluster, err error) {
	if r.clusters == nil {
		return consumer, provider, fmt.Errorf("the liqo provider is not configured")
	}
	var out [2]peering.Cluster
	for i, key := range []string{m.ConsumerCluster.ValueString(), m.ProviderCluster.ValueString()} {
		c, err := r.clusters.getWithLiqo(ctx, key)
		if err != nil {
			return consumer, provider, err
		}
		out[i] = c.peeringCluster(fmt.Sprintf("cluster %q", key))
	}
	return out[0], out[1], nil
}

// describe names the peering in messages.
func (m *peeringModel) describe() string {
	return fmt.Sprintf("peering of consumer %q with provider %q", m.ConsumerCluster.ValueString(), m.ProviderCluster.ValueString())
}

// Create peers the two clusters and waits until every module is up.
//
// A create that fails half-way (a denied request, a timeout, a controller that does not answer)
// saves what it observed in the state, with the error: Terraform marks the peering tainted, so
// the next apply removes it (Unpeer, in order) and peers again, and `terraform destroy` removes
// it; Read keeps it there while anything it made remains. Nothing is orphaned even when the
// clusters cannot be reached any more, which a best-effort Unpeer in the failed create could not
// promise; the library being idempotent, nothing is lost either. Only when nothing was made (the
// cluster IDs cannot be read, or the peering exists already and the create is refused: taken) is
// no state saved.
func (r *peeringResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	defer peeringIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	plan, ok := modelOf[peeringModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, peeringDefaultTimeout)
	resp.Diagnostics.Append(d...)
	r.peer(ctx, &plan, timeout, "create", &resp.State, &resp.Diagnostics, true)
}

// Update brings the peering in line with the plan: new resources are re-negotiated and the
// virtual node awaited with the new grant; new gateway parameters are written to the gateways.
func (r *peeringResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	defer peeringIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan, prior peeringModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	only, d := onlyTimeoutsChange(ctx, req.Plan, req.State)
	resp.Diagnostics.Append(d...)
	if d.HasError() {
		return
	}
	if only {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...) // new timeouts, nothing else to do
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, peeringDefaultTimeout)
	resp.Diagnostics.Append(d...)
	if !r.peer(ctx, &plan, timeout, "update", &resp.State, &resp.Diagnostics, false) {
		// The gateway may be half changed: keep the prior values, so the next plan shows the
		// change again (the requested resources come from the grant, whatever it is now).
		prior.Timeouts = plan.Timeouts
		had := prior.Gateway
		if st := r.observe(ctx, &prior); st != nil && prior.refresh(ctx, st) == nil {
			prior.Gateway = had // not what a half-done update wrote: the next plan shows the change again
			resp.Diagnostics.Append(resp.State.Set(ctx, &prior)...)
		} else {
			resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
			resp.Diagnostics.Append(resp.State.Set(ctx, &prior)...)
		}
	}
}

// peer runs peering.Peer for the model within timeout and saves the result; it reports whether
// it succeeded. On failure during a create (saveOnError), it saves what it can observe.
func (r *peeringResource) peer(ctx context.Context, plan *peeringModel, timeout time.Duration, op string,
	state *tfsdk.State, diags *diag.Diagnostics, saveOnError bool) bool {
	summary := "Peering " + plan.ConsumerCluster.ValueString() + " with " + plan.ProviderCluster.ValueString()
	opts, err := plan.options(ctx)
	if err != nil {
		diags.AddError(summary, err.Error())
		return false
	}
	consumer, provider, err := r.sides(ctx, plan)
	if err != nil {
		diags.AddError(summary, err.Error())
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, unlock, err := lockPair(ctx, r.clusters, plan, op)
	if err != nil {
		diags.AddError(summary, err.Error())
		return false
	}
	defer unlock()
	if op == "create" && plan.taken(ctx, consumer, provider, summary, diags) {
		return false
	}
	st, err := peering.Peer(ctx, consumer, provider, opts)
	if err == nil {
		if err := plan.refresh(ctx, st); err != nil {
			diags.AddError(summary, err.Error())
			return false
		}
		diags.Append(state.Set(ctx, plan)...)
		return !diags.HasError()
	}
	detail := fmt.Sprintf("%s (%s): %v", plan.describe(), op, err)
	if ctx.Err() != nil {
		detail += fmt.Sprintf("\n\nThe %s did not finish within %s: raise timeouts.%s if the clusters are slow.", op, timeout, op)
	}
	if saveOnError {
		// A fresh context: the operation's own may have ended.
		obsCtx, obsCancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer obsCancel()
		st, _, oerr := peering.Observe(obsCtx, consumer, provider, opts)
		if oerr == nil && plan.refresh(obsCtx, st) == nil {
			diags.Append(state.Set(obsCtx, plan)...)
			detail += "\n\nWhat was made is saved in the state, tainted: the next apply removes it and peers again; " +
				"terraform destroy removes it."
		}
	}
	diags.AddError(summary, detail)
	return false
}

// taken tells whether the consumer already peers with the provider in this direction (its
// Tenant, Identity or ResourceSlice exists, made by another Terraform state or by liqoctl), and
// then refuses the create with the import command, or fails when it cannot tell. A create would
// otherwise adopt that peering silently: change its grant, and remove it on destroy. The other
// direction of a bidirectional peering, and what a failed create leaves before the Tenant
// (tenant namespaces, network, nonce), are not such a peering; a tainted peering of this state
// is destroyed before it is created again. (The plan cannot tell: it plans the create of a
// replacement while the object it replaces still exists.)
func (m *peeringModel) taken(ctx context.Context, consumer, provider peering.Cluster, summary string, diags *diag.Diagnostics) bool {
	marks, err := peering.Established(ctx, consumer, provider)
	if err != nil {
		diags.AddError(summary, fmt.Sprintf("%s (create): looking for an existing peering: %v", m.describe(), err))
		return true
	}
	if len(marks) == 0 {
		return false
	}
	c, p := m.ConsumerCluster.ValueString(), m.ProviderCluster.ValueString()
	diags.AddError(summary, fmt.Sprintf("The %s exists already (%s), made by another Terraform state or by liqoctl: creating it "+
		"here would take it over (change its grant; destroy would remove it). Import it into this configuration instead, with\n\n"+
		"  terraform import liqo_peering.<name> %s/%s\n\nor an import block:\n\n"+
		"  import {\n    to = liqo_peering.<name>\n    identity = {\n      consumer_cluster = %q\n      provider_cluster = %q\n    }\n  }\n\n"+
		"(and `terraform state rm` it from the state that holds it, so that one state manages it); or remove it there first "+
		"(terraform destroy, or liqoctl unpeer).", m.describe(), strings.Join(marks, ", "), c, p, c, p))
	return true
}

// observe reads the peering of the model, or nil (and nothing) when it cannot.
func (r *peeringResource) observe(ctx context.Context, m *peeringModel) *peering.State {
	consumer, provider, err := r.sides(ctx, m)
	if err != nil {
		return nil
	}
	opts, err := m.options(ctx)
	if err != nil {
		return nil
	}
	obsCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	st, _, err := peering.Observe(obsCtx, consumer, provider, opts)
	if err != nil {
		return nil
	}
	return st
}

// Read refreshes the peering. A peering leaves the state only when nothing it made remains on
// either cluster (peering.Remains): one whose Tenant or ResourceSlice is gone but whose other
// objects are there (a create stopped half-way, a Tenant deleted out of band) stays, reported
// not up, so the next plan repairs it and destroy removes what is left.
func (r *peeringResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	peeringIdentity.record(ctx, &req.State, resp.Identity, &resp.Diagnostics) // Read keeps the two clusters
	state, ok := modelOf[peeringModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	summary := "Reading the peering of " + state.ConsumerCluster.ValueString() + " with " + state.ProviderCluster.ValueString()
	consumer, provider, err := r.sides(ctx, &state)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	// On import create_resource_slice is null: the slice, if any, is read back by refresh.
	opts := peering.Options{Networking: state.Networking.ValueBool(),
		NoResourceSlice: state.CreateResourceSlice.IsNull() || !state.CreateResourceSlice.ValueBool()}
	if state.Networking.IsNull() { // import: does the peering have a network?
		networked, err := peeringHasNetwork(ctx, consumer, provider)
		if err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
			return
		}
		opts.Networking = networked
		state.Networking = types.BoolValue(networked)
	}
	st, found, err := peering.Observe(ctx, consumer, provider, opts)
	if err != nil {
		resp.Diagnostics.AddError(summary, fmt.Sprintf("%s: %v", state.describe(), err))
		return
	}
	if !found {
		// Not whole: it stays in the state while anything it made remains, so that the plan
		// repairs it (or replaces it, when tainted) and destroy removes it.
		left, err := peering.Remains(ctx, consumer, provider)
		if err != nil {
			resp.Diagnostics.AddError(summary, fmt.Sprintf("%s: %v", state.describe(), err))
			return
		}
		if len(left) == 0 {
			resp.State.RemoveResource(ctx)
			return
		}
	}
	if err := state.refresh(ctx, st); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// peeringHasNetwork tells whether the consumer holds a Configuration of the provider's
// networks: the first object the network module makes (for import, where `networking` is not
// known).
func peeringHasNetwork(ctx context.Context, consumer, provider peering.Cluster) (bool, error) {
	pid, err := peering.ClusterID(ctx, provider)
	if err != nil {
		return false, err
	}
	key := client.ObjectKey{Namespace: peering.TenantNamespace(pid), Name: string(pid)}
	err = consumer.Client.Get(ctx, key, &netv1beta1.Configuration{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading Configuration %s on %s: %w", key, consumer.Name, err)
	}
	return true, nil
}

// Delete unpeers: slice and virtual node, identity and tenant, then the network and the tenant
// namespaces unless the peering in the other direction still uses them.
func (r *peeringResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, ok := modelOf[peeringModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	summary := "Unpeering " + state.ConsumerCluster.ValueString() + " from " + state.ProviderCluster.ValueString()
	timeout, d := state.Timeouts.Delete(ctx, peeringDefaultTimeout)
	resp.Diagnostics.Append(d...)
	consumer, provider, err := r.sides(ctx, &state)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, unlock, err := lockPair(ctx, r.clusters, &state, "delete")
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	defer unlock()
	if err := peering.Unpeer(ctx, consumer, provider, peering.Options{Networking: state.Networking.ValueBool()}); err != nil {
		detail := fmt.Sprintf("%s (delete): %v", state.describe(), err)
		if ctx.Err() != nil {
			detail += fmt.Sprintf("\n\nThe delete did not finish within %s: raise timeouts.delete, or look at what holds the object.", timeout)
		}
		resp.Diagnostics.AddError(summary, detail)
	}
}

// ImportState takes `<consumer_cluster>/<provider_cluster>` (keys of the provider's clusters map),
// or the identity.
func (r *peeringResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	t, err := peeringIdentity.target(ctx, req, func(id string) ([]string, error) {
		parts := strings.Split(id, "/")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return nil, fmt.Errorf("import ID %q is not `<consumer_cluster>/<provider_cluster>` (two keys of the provider's clusters map)", id)
		}
		return parts, nil
	})
	if err != nil {
		resp.Diagnostics.AddError("Importing peering", err.Error())
		return
	}
	keys := []string{t.value("consumer_cluster").ValueString(), t.value("provider_cluster").ValueString()}
	if keys[0] == keys[1] {
		resp.Diagnostics.AddError("Importing peering", fmt.Sprintf("import ID %q names the same cluster twice", t.id))
		return
	}
	if r.clusters != nil {
		for _, k := range keys {
			if _, err := r.clusters.lookup(k); err != nil {
				resp.Diagnostics.AddError("Importing peering", err.Error())
				return
			}
		}
	}
	peeringIdentity.save(ctx, t, resp)
}

// asks says whether the observed slice asks for resource name: it does when it names it, or
// when it names nothing (then the provider's grant is the ask), but for a tethered slice.
func asks(st *peering.State, name corev1.ResourceName) bool {
	if len(st.Asked) == 0 {
		return st.SliceClass != consts.TetheredSliceClass // a tethered slice asks for nothing: its grant is all
	}
	_, ok := st.Asked[name]
	return ok
}
