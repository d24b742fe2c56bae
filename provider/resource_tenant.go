package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

var (
	_ resource.Resource                = (*tenantResource)(nil)
	_ resource.ResourceWithConfigure   = (*tenantResource)(nil)
	_ resource.ResourceWithImportState = (*tenantResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*tenantResource)(nil)
)

// tenantResource manages the Tenant of a consumer cluster in the provider cluster.
type tenantResource struct {
	clusterResource
}

type tenantModel struct {
	ID                types.String   `tfsdk:"id"`
	Cluster           types.String   `tfsdk:"cluster"`
	Namespace         types.String   `tfsdk:"namespace"`
	Name              types.String   `tfsdk:"name"`
	ConsumerClusterID types.String   `tfsdk:"consumer_cluster_id"`
	AuthzPolicy       types.String   `tfsdk:"authz_policy"`
	TenantCondition   types.String   `tfsdk:"tenant_condition"`
	PublicKey         types.String   `tfsdk:"public_key"`
	CSR               types.String   `tfsdk:"csr"`
	Signature         types.String   `tfsdk:"signature"`
	TenantNamespace   types.String   `tfsdk:"tenant_namespace"`
	Timeouts          timeouts.Value `tfsdk:"timeouts"`
}

func newTenantResource() resource.Resource { return &tenantResource{} }

// Metadata names the resource liqo_tenant.
func (r *tenantResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_tenant"
}

// Schema describes liqo_tenant.
func (r *tenantResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	b64 := func(what string) schema.StringAttribute {
		return schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "The consumer's " + what + " from the handshake, base64-encoded (standard alphabet, " +
				"with padding, as `base64encode()` gives). Not needed with `authz_policy = \"TolerateNoHandshake\"`.",
			Validators: []validator.String{authBase64Validator{}},
		}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Provider side of a peering: the `Tenant` (`authentication.liqo.io/v1beta1`) that " +
			"represents a consumer cluster in its tenant namespace of the provider cluster. It decides whether the " +
			"consumer's ResourceSlices are accepted (`authz_policy`) and the tenant's administrative state " +
			"(`tenant_condition`: `Cordoned` stops new slices, `Drained` evicts the consumer's workloads). The object " +
			"carries the label `liqo.io/remote-cluster-id=<consumer_cluster_id>`.",
		Attributes: map[string]schema.Attribute{
			"id":      idAttribute("[cluster/]namespace/name"),
			"cluster": clusterAttribute(),
			"namespace": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Tenant namespace of the consumer in the provider cluster (e.g. `liqo_tenant_namespace.x.name`). Changing it replaces the Tenant.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(clusterIDPattern, "must be a DNS label")},
			},
			"name": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Name of the Tenant; default: the consumer cluster ID. Changing it replaces the Tenant.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace(), stringplanmodifier.UseStateForUnknown()},
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(clusterIDPattern, "must be a DNS label")},
			},
			"consumer_cluster_id": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Cluster ID of the consumer cluster (`spec.clusterID`). The API makes it immutable: " +
					"changing it replaces the Tenant.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{clusterIDValidator()},
			},
			"authz_policy": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(string(authv1beta1.KeysExchange)),
				MarkdownDescription: "How the consumer's ResourceSlices are authorized: `KeysExchange` (default, as in the API: " +
					"only after a handshake, i.e. with `public_key` and `signature`) or `TolerateNoHandshake` (declarative " +
					"peering without handshake, as in Liqo's declarative-peering guide). Updated in place.",
				Validators: []validator.String{stringvalidator.OneOf(string(authv1beta1.KeysExchange), string(authv1beta1.TolerateNoHandshake))},
			},
			"tenant_condition": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(string(authv1beta1.TenantConditionActive)),
				MarkdownDescription: "Administrative state of the tenant: `Active` (default), `Cordoned` (keeps its workloads, " +
					"no new ResourceSlices) or `Drained` (its workloads are evicted). Updated in place.",
				Validators: []validator.String{stringvalidator.OneOf(string(authv1beta1.TenantConditionActive),
					string(authv1beta1.TenantConditionCordoned), string(authv1beta1.TenantConditionDrained))},
			},
			"public_key": b64("public key"),
			"csr":        b64("certificate signing request for its control-plane identity"),
			"signature":  b64("signature of the handshake nonce, made with its private key"),
			"tenant_namespace": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The tenant namespace as reported by the controllers in `status.tenantNamespace`; null until they report it.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Delete: true}),
		},
	}
}

// ModifyPlan shows the default name in the plan.
func (r *tenantResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.clusterResource.ModifyPlan(ctx, req, resp)
	if req.Plan.Raw.IsNull() || resp.Diagnostics.HasError() {
		return
	}
	var plan tenantModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || !plan.Name.IsUnknown() || plan.ConsumerClusterID.IsUnknown() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("name"), plan.ConsumerClusterID.ValueString())...)
}

// apply writes the plan into a Tenant object.
func (m *tenantModel) apply(t *authv1beta1.Tenant) error {
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[consts.RemoteClusterIDLabel] = m.ConsumerClusterID.ValueString()
	t.Spec.ClusterID = corev1beta1.ClusterID(m.ConsumerClusterID.ValueString())
	t.Spec.AuthzPolicy = authv1beta1.AuthzPolicy(m.AuthzPolicy.ValueString())
	t.Spec.TenantCondition = authv1beta1.TenantCondition(m.TenantCondition.ValueString())
	var err error
	if t.Spec.PublicKey, err = authBytes(m.PublicKey); err != nil {
		return fmt.Errorf("public_key: %w", err)
	}
	if t.Spec.CSR, err = authBytes(m.CSR); err != nil {
		return fmt.Errorf("csr: %w", err)
	}
	if t.Spec.Signature, err = authBytes(m.Signature); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	return nil
}

// refresh copies a Tenant object into the model.
func (m *tenantModel) refresh(cluster string, t *authv1beta1.Tenant) {
	m.ID = types.StringValue(objectID(cluster, t.Namespace, t.Name))
	m.Namespace = types.StringValue(t.Namespace)
	m.Name = types.StringValue(t.Name)
	m.ConsumerClusterID = types.StringValue(string(t.Spec.ClusterID))
	m.AuthzPolicy = types.StringValue(string(t.Spec.AuthzPolicy))
	m.TenantCondition = types.StringValue(string(t.Spec.TenantCondition))
	m.PublicKey = authBase64OrNull(t.Spec.PublicKey)
	m.CSR = authBase64OrNull(t.Spec.CSR)
	m.Signature = authBase64OrNull(t.Spec.Signature)
	m.TenantNamespace = stringOrNull(t.Status.TenantNamespace)
}

// Create makes the Tenant.
func (r *tenantResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan tenantModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := r.client(ctx, plan.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError("Creating tenant", err.Error())
		return
	}
	t := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: plan.Name.ValueString(), Namespace: plan.Namespace.ValueString()}}
	if err := plan.apply(t); err != nil {
		resp.Diagnostics.AddError("Creating tenant", fmt.Sprintf("Tenant %s/%s: %v", t.Namespace, t.Name, err))
		return
	}
	if err := c.ctrl.Create(ctx, t); err != nil {
		if apierrors.IsAlreadyExists(err) {
			resp.Diagnostics.AddError("Creating tenant",
				fmt.Sprintf("Tenant %s/%s already exists in %s: import it with `terraform import <address> %s`",
					t.Namespace, t.Name, c.describe(), objectID(c.name, t.Namespace, t.Name)))
			return
		}
		resp.Diagnostics.AddError("Creating tenant", fmt.Sprintf("creating Tenant %s/%s in %s: %v", t.Namespace, t.Name, c.describe(), err))
		return
	}
	plan.refresh(c.name, t)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Read refreshes the state from the cluster; a Tenant deleted out of band leaves the state, so
// the next plan re-creates it.
func (r *tenantResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state tenantModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := r.client(ctx, state.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError("Reading tenant", err.Error())
		return
	}
	t := &authv1beta1.Tenant{}
	found, err := readObject(ctx, c, "Tenant", client.ObjectKey{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}, t)
	if err != nil {
		resp.Diagnostics.AddError("Reading tenant", err.Error())
		return
	}
	if !found {
		resp.State.RemoveResource(ctx)
		return
	}
	state.refresh(c.name, t)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update changes the Tenant's policy, condition and handshake fields in place.
func (r *tenantResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan tenantModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := r.client(ctx, plan.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError("Updating tenant", err.Error())
		return
	}
	t := &authv1beta1.Tenant{}
	key := client.ObjectKey{Namespace: plan.Namespace.ValueString(), Name: plan.Name.ValueString()}
	if err := patchObject(ctx, c, "Tenant", key, t, func() error { return plan.apply(t) }); err != nil {
		resp.Diagnostics.AddError("Updating tenant", err.Error())
		return
	}
	plan.refresh(c.name, t)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Delete removes the Tenant and waits until it is gone.
func (r *tenantResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state tenantModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, 5*time.Minute)
	resp.Diagnostics.Append(d...)
	c, err := r.client(ctx, state.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError("Deleting tenant", err.Error())
		return
	}
	t := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}}
	if err := deleteAndWait(ctx, c, t, timeout); err != nil {
		resp.Diagnostics.AddError("Deleting tenant", err.Error())
	}
}

// ImportState takes `[cluster/]namespace/name`.
func (r *tenantResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	cluster, namespace, name, err := parseObjectID(req.ID, true)
	if err != nil {
		resp.Diagnostics.AddError("Importing tenant", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("cluster"), stringOrNull(cluster))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), namespace)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
}
