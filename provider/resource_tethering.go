package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/tethering"
)

// tetheringDefaultTimeout bounds a create (every namespace offloaded) and a delete (every
// workload home) unless the timeouts block says otherwise.
const tetheringDefaultTimeout = 5 * time.Minute

// tetheringResource is liqo_tethering: seed 004's tethered mode on the home cluster, the
// ConfigMap consts.TetheringConfigMap that the controller manager's tethering controller acts on.
type tetheringResource struct {
	objectResource[tetheringModel, *tetheringModel, *corev1.ConfigMap]
}

type tetheringModel struct {
	ID               types.String   `tfsdk:"id"`
	Cluster          types.String   `tfsdk:"cluster"`
	Namespace        types.String   `tfsdk:"namespace"`
	Name             types.String   `tfsdk:"name"`
	ForeignClusterID types.String   `tfsdk:"foreign_cluster_id"`
	Timeouts         timeouts.Value `tfsdk:"timeouts"`
}

func newTetheringResource() resource.Resource {
	r := &tetheringResource{}
	r.objectKind = objectKind[tetheringModel, *corev1.ConfigMap]{
		typeName: "_tethering",
		kind:     "ConfigMap", noun: "tethering", needLiqo: true, namespaced: true, timeout: tetheringDefaultTimeout,
		build:   tetheringBuild,
		read:    tetheringRead,
		wait:    tetheringWait,
		deleted: tetheringDeleted,
	}
	return r
}

// Schema describes liqo_tethering.
func (r *tetheringResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/liqo-tethering", timeouts.Opts{Create: true, Delete: true},
		"Seed 004's tethered mode, on the home cluster `cluster`: every namespace of it but Kubernetes' own and Liqo's "+
			"(and those it holds for a consumer) is offloaded to the foreign cluster `foreign_cluster_id` with the `Remote` "+
			"pod offloading strategy, namespaces created later too, so the foreign cluster schedules the home's workloads; "+
			"and a `liqo_peering` of the foreign cluster as consumer with `resource_slice_class = \"tethered\"` is granted "+
			"everything the home cluster shares. It needs the home's peering with the foreign cluster as provider (its virtual "+
			"node) first. It is refused, with the reason, when the home cluster offers resources to another cluster (a "+
			"Tenant of another consumer: the seed's rule) or is tethered to another cluster already.\n\n"+
			"Create waits until every such namespace is offloaded (`Ready`). Destroy ends the tethering: the offloadings it "+
			"made are removed and it waits until no pod of those namespaces is left on the foreign cluster's virtual nodes "+
			"(controllers' pods are created again on the home's nodes; a bare pod is not, as with any unoffloading). The "+
			"object is the ConfigMap `liqo-tethering` in the Liqo namespace.",
		map[string]schema.Attribute{
			"namespace": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "The Liqo namespace of `cluster`, where the ConfigMap is; default: the cluster's `liqo_namespace` " +
					"of the provider's configuration.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"name": schema.StringAttribute{
				Computed: true, Default: stringdefault.StaticString(consts.TetheringConfigMap),
				MarkdownDescription: "The ConfigMap's name, always `" + consts.TetheringConfigMap + "`.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"foreign_cluster_id": clusterIDAttribute("Cluster ID of the foreign cluster the home cluster is tethered to. " +
				"Changing it ends the tethering and starts another."),
		})
}

// ModifyPlan shows the Liqo namespace of the cluster in the plan.
func (r *tetheringResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	plan, ok := plannedModel[tetheringModel](ctx, &r.clusterResource, req, resp)
	if !ok || !plan.Namespace.IsUnknown() || plan.Cluster.IsUnknown() || r.clusters == nil {
		return
	}
	if e, err := r.clusters.lookup(plan.Cluster.ValueString()); err == nil {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("namespace"), e.liqoNS)...)
	}
}

func (m *tetheringModel) target() (types.String, client.ObjectKey) {
	return m.Cluster, client.ObjectKey{Namespace: m.Namespace.ValueString(), Name: consts.TetheringConfigMap}
}

func (m *tetheringModel) setID(cluster string, key client.ObjectKey) {
	m.ID = types.StringValue(objectID(cluster, key.Namespace, key.Name))
}

func (m *tetheringModel) timeoutsValue() timeouts.Value { return m.Timeouts }

// tetheringBuild checks seed 004's rule and that the home cluster has a virtual node of the
// foreign cluster, then writes the foreign cluster's ID into the ConfigMap.
func tetheringBuild(ctx context.Context, w objectWrite[tetheringModel], cm *corev1.ConfigMap) error {
	foreign, c := w.plan.ForeignClusterID.ValueString(), w.cluster
	if err := tethering.Refusal(ctx, c.ctrl, cm.Namespace, foreign); err != nil {
		return fmt.Errorf("tethering %s to %s refused: %w", c.describe(), foreign, err)
	}
	var nodes corev1.NodeList
	if err := c.ctrl.List(ctx, &nodes, client.MatchingLabels{consts.TypeLabel: consts.VirtualNodeType, consts.RemoteClusterIDLabel: foreign}); err != nil {
		return fmt.Errorf("listing the virtual nodes of %s in %s: %w", foreign, c.describe(), err)
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("%s has no virtual node of %s: a tethered cluster runs its workloads on the foreign cluster; "+
			"peer first with a liqo_peering whose consumer_cluster is this cluster and provider_cluster the foreign one "+
			"(and depends_on it)", c.describe(), foreign)
	}
	want := tethering.ConfigMap(cm.Namespace, foreign)
	cm.Data = want.Data
	return nil
}

// tetheringRead reads the foreign cluster's ID back: another one shows as a replacement.
func tetheringRead(_ context.Context, _ *clusterClient, state *tetheringModel, cm *corev1.ConfigMap) error {
	state.ForeignClusterID = types.StringValue(cm.Data[consts.TetheredClusterIDKey])
	return nil
}

// tetheringWait waits until every namespace the tethering offloads is offloaded.
func tetheringWait(ctx context.Context, c *clusterClient, plan *tetheringModel, cm *corev1.ConfigMap, timeout time.Duration, op string) (*corev1.ConfigMap, error) {
	err := pollLeft(ctx, timeout, func(ctx context.Context) ([]string, error) {
		return tethering.NotOffloaded(ctx, c.ctrl, plan.Namespace.ValueString())
	})
	if err != nil {
		return cm, fmt.Errorf("waiting for %s's namespaces to be offloaded to %s: %w; raise timeouts.%s, or look at the "+
			"NamespaceOffloadings' status and the controller manager's Events on ConfigMap %s/%s", c.describe(),
			plan.ForeignClusterID.ValueString(), err, op, cm.Namespace, cm.Name)
	}
	return cm, nil
}

// tetheringDeleted waits, once the ConfigMap is gone, until the home cluster's workloads are
// home, then deletes the pods the foreign cluster's virtual kubelet released, which their
// controllers replaced at home (tethering.Released).
func tetheringDeleted(ctx context.Context, c *clusterClient, state *tetheringModel, timeout time.Duration) error {
	foreign := state.ForeignClusterID.ValueString()
	err := pollLeft(ctx, timeout, func(ctx context.Context) ([]string, error) { return tethering.NotHome(ctx, c.ctrl, foreign) })
	if err != nil {
		return fmt.Errorf("waiting for %s's workloads to come home from %s: %w; raise timeouts.delete, or look at the "+
			"controller manager's log", c.describe(), foreign, err)
	}
	released, err := tethering.Released(ctx, c.ctrl, foreign)
	if err != nil {
		return fmt.Errorf("the pods %s released in %s: %w", foreign, c.describe(), err)
	}
	for i := range released {
		if err := c.ctrl.Delete(ctx, &released[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting pod %s/%s, released by %s and replaced at home, in %s: %w",
				released[i].Namespace, released[i].Name, foreign, c.describe(), err)
		}
	}
	return nil
}

// pollLeft polls left until it lists nothing, within timeout; the error says what was left
// last, and the last read error if any.
func pollLeft(ctx context.Context, timeout time.Duration, left func(context.Context) ([]string, error)) error {
	var last []string
	var readErr error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := left(ctx)
		if err != nil {
			if ctx.Err() == nil {
				readErr = err
			}
			return false, nil
		}
		last, readErr = l, nil
		return len(l) == 0, nil
	})
	if err == nil {
		return nil
	}
	if readErr != nil {
		return fmt.Errorf("%w (not yet: %s; last read error: %w)", err, strings.Join(last, ", "), readErr)
	}
	return fmt.Errorf("%w (not yet: %s)", err, strings.Join(last, ", "))
}
