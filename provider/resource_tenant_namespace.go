package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

var (
	_ resource.Resource                   = (*tenantNamespaceResource)(nil)
	_ resource.ResourceWithConfigure      = (*tenantNamespaceResource)(nil)
	_ resource.ResourceWithImportState    = (*tenantNamespaceResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*tenantNamespaceResource)(nil)
	_ resource.ResourceWithValidateConfig = (*tenantNamespaceResource)(nil)
)

// tenantNamespaceResource manages the namespace that holds one peering's objects in a cluster.
type tenantNamespaceResource struct {
	clusterResource
}

type tenantNamespaceModel struct {
	ID              types.String   `tfsdk:"id"`
	Cluster         types.String   `tfsdk:"cluster"`
	Name            types.String   `tfsdk:"name"`
	RemoteClusterID types.String   `tfsdk:"remote_cluster_id"`
	Labels          types.Map      `tfsdk:"labels"`
	Timeouts        timeouts.Value `tfsdk:"timeouts"`
}

func newTenantNamespaceResource() resource.Resource { return &tenantNamespaceResource{} }

// Metadata names the resource liqo_tenant_namespace.
func (r *tenantNamespaceResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_tenant_namespace"
}

// Schema describes liqo_tenant_namespace.
func (r *tenantNamespaceResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The tenant namespace of one peering in one cluster: it holds every object of the peering " +
			"with the remote cluster `remote_cluster_id`, and carries the labels `liqo.io/remote-cluster-id` and " +
			"`liqo.io/tenant-namespace=true`. Destroying it waits until the namespace is gone.",
		Attributes: map[string]schema.Attribute{
			"id":      idAttribute("[cluster/]name"),
			"cluster": clusterAttribute(),
			"name": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Name of the namespace; default: `liqo-tenant-<remote_cluster_id>`. Changing it replaces the namespace.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace(), stringplanmodifier.UseStateForUnknown()},
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(clusterIDPattern, "must be a DNS label")},
			},
			"remote_cluster_id": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Cluster ID of the peer this namespace is for. Changing it replaces the namespace.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{clusterIDValidator()},
			},
			"labels": schema.MapAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "More labels for the namespace. The resource sets `liqo.io/remote-cluster-id`, `liqo.io/tenant-namespace=true` and, unless given here, " +
					"Pod Security's `pod-security.kubernetes.io/{enforce,audit,warn}=privileged` (the peering's gateway pods need NET_ADMIN), as Liqo does.",
				Validators: []validator.Map{mapvalidator.KeysAre(stringvalidator.NoneOf(consts.RemoteClusterIDLabel, consts.TenantNamespaceLabel))},
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Delete: true}),
		},
	}
}

// ValidateConfig has nothing to add to the attribute validators yet.
func (r *tenantNamespaceResource) ValidateConfig(context.Context, resource.ValidateConfigRequest, *resource.ValidateConfigResponse) {
}

// ModifyPlan shows the default name in the plan.
func (r *tenantNamespaceResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.clusterResource.ModifyPlan(ctx, req, resp)
	if req.Plan.Raw.IsNull() || resp.Diagnostics.HasError() {
		return
	}
	var plan tenantNamespaceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || !plan.Name.IsUnknown() || plan.RemoteClusterID.IsUnknown() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("name"), "liqo-tenant-"+plan.RemoteClusterID.ValueString())...)
}

func (m *tenantNamespaceModel) labels(ctx context.Context) (map[string]string, error) {
	out := consts.TenantNamespaceLabels(m.RemoteClusterID.ValueString())
	if !m.Labels.IsNull() && !m.Labels.IsUnknown() {
		more := map[string]string{}
		if d := m.Labels.ElementsAs(ctx, &more, false); d.HasError() {
			return nil, fmt.Errorf("reading labels: %v", d)
		}
		for k, v := range more { // may lower the Pod Security levels; the Liqo labels are refused by the validator
			out[k] = v
		}
	}
	return out, nil
}

// Create makes the namespace.
func (r *tenantNamespaceResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan tenantNamespaceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := r.client(ctx, plan.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError("Creating tenant namespace", err.Error())
		return
	}
	labels, err := plan.labels(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Creating tenant namespace", err.Error())
		return
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: plan.Name.ValueString(), Labels: labels}}
	if err := c.ctrl.Create(ctx, ns); err != nil {
		if apierrors.IsAlreadyExists(err) {
			resp.Diagnostics.AddError("Creating tenant namespace",
				fmt.Sprintf("namespace %s already exists in %s: import it with `terraform import <address> %s`",
					ns.Name, c.describe(), objectID(c.name, "", ns.Name)))
			return
		}
		resp.Diagnostics.AddError("Creating tenant namespace", fmt.Sprintf("creating namespace %s in %s: %v", ns.Name, c.describe(), err))
		return
	}
	plan.ID = types.StringValue(objectID(c.name, "", ns.Name))
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Read refreshes the state from the cluster; a namespace deleted out of band leaves the state,
// so the next plan re-creates it.
func (r *tenantNamespaceResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state tenantNamespaceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := r.client(ctx, state.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError("Reading tenant namespace", err.Error())
		return
	}
	ns := &corev1.Namespace{}
	found, err := readObject(ctx, c, "Namespace", client.ObjectKey{Name: state.Name.ValueString()}, ns)
	if err != nil {
		resp.Diagnostics.AddError("Reading tenant namespace", err.Error())
		return
	}
	if !found {
		resp.State.RemoveResource(ctx)
		return
	}
	state.RemoteClusterID = types.StringValue(ns.Labels[consts.RemoteClusterIDLabel])
	// Keep only the labels this resource manages: others' labels are not drift.
	if !state.Labels.IsNull() {
		managed := map[string]string{}
		if d := state.Labels.ElementsAs(ctx, &managed, false); d.HasError() {
			resp.Diagnostics.Append(d...)
			return
		}
		current := map[string]string{}
		for k := range managed {
			if v, ok := ns.Labels[k]; ok {
				current[k] = v
			}
		}
		lv, d := types.MapValueFrom(ctx, types.StringType, current)
		resp.Diagnostics.Append(d...)
		state.Labels = lv
	}
	state.ID = types.StringValue(objectID(c.name, "", ns.Name))
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update changes the namespace's labels in place, removing those no longer configured.
func (r *tenantNamespaceResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state tenantNamespaceModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := r.client(ctx, plan.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError("Updating tenant namespace", err.Error())
		return
	}
	want, err := plan.labels(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Updating tenant namespace", err.Error())
		return
	}
	old, err := state.labels(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Updating tenant namespace", err.Error())
		return
	}
	ns := &corev1.Namespace{}
	err = patchObject(ctx, c, "Namespace", client.ObjectKey{Name: plan.Name.ValueString()}, ns, func() error {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		for k := range old {
			if _, keep := want[k]; !keep {
				delete(ns.Labels, k)
			}
		}
		for k, v := range want {
			ns.Labels[k] = v
		}
		return nil
	})
	if err != nil {
		resp.Diagnostics.AddError("Updating tenant namespace", err.Error())
		return
	}
	plan.ID = types.StringValue(objectID(c.name, "", ns.Name))
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Delete removes the namespace and waits until it is gone, so that no Terminating namespace is
// left behind and a re-create does not collide with it.
func (r *tenantNamespaceResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state tenantNamespaceModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, 5*time.Minute)
	resp.Diagnostics.Append(d...)
	c, err := r.client(ctx, state.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError("Deleting tenant namespace", err.Error())
		return
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: state.Name.ValueString()}}
	if err := deleteAndWait(ctx, c, ns, timeout); err != nil {
		resp.Diagnostics.AddError("Deleting tenant namespace", err.Error())
	}
}

// ImportState takes `[cluster/]name`.
func (r *tenantNamespaceResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	cluster, _, name, err := parseObjectID(req.ID, false)
	if err != nil {
		resp.Diagnostics.AddError("Importing tenant namespace", err.Error())
		return
	}
	c, err := r.client(ctx, types.StringValue(cluster), false)
	if err != nil {
		resp.Diagnostics.AddError("Importing tenant namespace", err.Error())
		return
	}
	ns := &corev1.Namespace{}
	if err := c.ctrl.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		resp.Diagnostics.AddError("Importing tenant namespace", fmt.Sprintf("reading namespace %s in %s: %v", name, c.describe(), err))
		return
	}
	if ns.Labels[consts.TenantNamespaceLabel] != "true" || ns.Labels[consts.RemoteClusterIDLabel] == "" {
		resp.Diagnostics.AddError("Importing tenant namespace", fmt.Sprintf("namespace %s in %s is not a tenant namespace: "+
			"it lacks the labels %s=true and %s", name, c.describe(), consts.TenantNamespaceLabel, consts.RemoteClusterIDLabel))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("cluster"), stringOrNull(cluster))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
}
