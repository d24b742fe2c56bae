package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

var _ resource.ResourceWithValidateConfig = (*tenantNamespaceResource)(nil)

// tenantNamespaceResource manages the namespace that holds one peering's objects in a cluster.
type tenantNamespaceResource struct {
	objectResource[tenantNamespaceModel, *tenantNamespaceModel, *corev1.Namespace]
}

type tenantNamespaceModel struct {
	ID              types.String   `tfsdk:"id"`
	Cluster         types.String   `tfsdk:"cluster"`
	Name            types.String   `tfsdk:"name"`
	RemoteClusterID types.String   `tfsdk:"remote_cluster_id"`
	Labels          types.Map      `tfsdk:"labels"`
	Timeouts        timeouts.Value `tfsdk:"timeouts"`
}

func newTenantNamespaceResource() resource.Resource {
	r := &tenantNamespaceResource{}
	r.objectKind = objectKind[tenantNamespaceModel, *corev1.Namespace]{
		typeName: "_tenant_namespace",
		kind:     "Namespace", noun: "tenant namespace", timeout: 5 * time.Minute,
		build:    tenantNamespaceBuild,
		read:     tenantNamespaceRead,
		imported: tenantNamespaceImported,
	}
	return r
}

// Schema describes liqo_tenant_namespace.
func (r *tenantNamespaceResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = objectSchema(ctx, "[cluster/]name", timeouts.Opts{Delete: true},
		"The tenant namespace of one peering in one cluster: it holds every object of the peering "+
			"with the remote cluster `remote_cluster_id`, and carries the labels `liqo.io/remote-cluster-id` and "+
			"`liqo.io/tenant-namespace=true`. Destroying it waits until the namespace is gone.",
		map[string]schema.Attribute{
			"name": derivedDefaultString("Name of the namespace; default: `liqo-tenant-<remote_cluster_id>`. Changing it "+
				"replaces the namespace.", dnsLabelValidators()...),
			"remote_cluster_id": clusterIDAttribute("Cluster ID of the peer this namespace is for. Changing it replaces the namespace."),
			"labels": schema.MapAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "More labels for the namespace. The resource sets `liqo.io/remote-cluster-id`, `liqo.io/tenant-namespace=true` and, unless given here, " +
					"Pod Security's `pod-security.kubernetes.io/{enforce,audit,warn}=privileged` (the peering's gateway pods need NET_ADMIN), as Liqo does.",
				Validators: []validator.Map{mapvalidator.KeysAre(stringvalidator.NoneOf(consts.RemoteClusterIDLabel, consts.TenantNamespaceLabel))},
			},
		})
}

// ValidateConfig has nothing to add to the attribute validators yet.
func (r *tenantNamespaceResource) ValidateConfig(context.Context, resource.ValidateConfigRequest, *resource.ValidateConfigResponse) {
}

// ModifyPlan shows the default name in the plan.
func (r *tenantNamespaceResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if plan, ok := plannedModel[tenantNamespaceModel](ctx, &r.clusterResource, req, resp); ok {
		planDerivedDefault(ctx, resp, "name", plan.Name, plan.RemoteClusterID, consts.TenantNamespace)
	}
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

func (m *tenantNamespaceModel) target() (types.String, client.ObjectKey) {
	return m.Cluster, client.ObjectKey{Name: m.Name.ValueString()}
}

func (m *tenantNamespaceModel) setID(cluster string, key client.ObjectKey) {
	m.ID = types.StringValue(objectID(cluster, "", key.Name))
}

func (m *tenantNamespaceModel) timeoutsValue() timeouts.Value { return m.Timeouts }

// tenantNamespaceBuild sets the namespace's labels: the tenant labels and the configured ones;
// on update, the labels the state had and the plan drops are removed.
func tenantNamespaceBuild(ctx context.Context, w objectWrite[tenantNamespaceModel], ns *corev1.Namespace) error {
	want, err := w.plan.labels(ctx)
	if err != nil {
		return err
	}
	var old map[string]string
	if w.state != nil {
		if old, err = w.state.labels(ctx); err != nil {
			return err
		}
	}
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
}

// tenantNamespaceRead refreshes the state from the namespace, keeping only the labels this
// resource manages: others' labels are not drift.
func tenantNamespaceRead(ctx context.Context, _ *clusterClient, state *tenantNamespaceModel, ns *corev1.Namespace) error {
	state.RemoteClusterID = types.StringValue(ns.Labels[consts.RemoteClusterIDLabel])
	if state.Labels.IsNull() {
		return nil
	}
	managed := map[string]string{}
	if err := diagsError(state.Labels.ElementsAs(ctx, &managed, false)); err != nil {
		return err
	}
	current := map[string]string{}
	for k := range managed {
		if v, ok := ns.Labels[k]; ok {
			current[k] = v
		}
	}
	lv, d := types.MapValueFrom(ctx, types.StringType, current)
	state.Labels = lv
	return diagsError(d)
}

// tenantNamespaceImported checks that an imported namespace is a tenant namespace.
func tenantNamespaceImported(c *clusterClient, ns *corev1.Namespace) error {
	if ns.Labels[consts.TenantNamespaceLabel] != "true" || ns.Labels[consts.RemoteClusterIDLabel] == "" {
		return fmt.Errorf("namespace %s in %s is not a tenant namespace: it lacks the labels %s=true and %s",
			ns.Name, c.describe(), consts.TenantNamespaceLabel, consts.RemoteClusterIDLabel)
	}
	return nil
}
