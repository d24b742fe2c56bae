package provider

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	offloadingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

var _ resource.ResourceWithValidateConfig = (*namespaceOffloadingResource)(nil)

// namespaceOffloadingResource manages the NamespaceOffloading of a namespace, which extends it
// to the provider clusters.
type namespaceOffloadingResource struct {
	objectResource[namespaceOffloadingModel, *namespaceOffloadingModel, *offloadingv1beta1.NamespaceOffloading]
}

type namespaceOffloadingModel struct {
	ID                       types.String   `tfsdk:"id"`
	Cluster                  types.String   `tfsdk:"cluster"`
	Namespace                types.String   `tfsdk:"namespace"`
	NamespaceMappingStrategy types.String   `tfsdk:"namespace_mapping_strategy"`
	RemoteNamespaceName      types.String   `tfsdk:"remote_namespace_name"`
	PodOffloadingStrategy    types.String   `tfsdk:"pod_offloading_strategy"`
	ClusterSelector          types.List     `tfsdk:"cluster_selector"`
	Phase                    types.String   `tfsdk:"phase"`
	Timeouts                 timeouts.Value `tfsdk:"timeouts"`
}

type nsoffTermModel struct {
	MatchExpressions types.List `tfsdk:"match_expressions"`
}

type nsoffExpressionModel struct {
	Key      types.String `tfsdk:"key"`
	Operator types.String `tfsdk:"operator"`
	Values   types.List   `tfsdk:"values"`
}

var (
	nsoffExpressionType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"key": types.StringType, "operator": types.StringType, "values": types.ListType{ElemType: types.StringType},
	}}
	nsoffTermType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"match_expressions": types.ListType{ElemType: nsoffExpressionType},
	}}
)

var nsoffOperators = []string{
	string(corev1.NodeSelectorOpIn), string(corev1.NodeSelectorOpNotIn), string(corev1.NodeSelectorOpExists),
	string(corev1.NodeSelectorOpDoesNotExist), string(corev1.NodeSelectorOpGt), string(corev1.NodeSelectorOpLt),
}

func newNamespaceOffloadingResource() resource.Resource {
	r := &namespaceOffloadingResource{}
	r.objectKind = objectKind[namespaceOffloadingModel, *offloadingv1beta1.NamespaceOffloading]{
		typeName: "_namespace_offloading",
		kind:     "NamespaceOffloading", noun: "namespace offloading", needLiqo: true, timeout: 5 * time.Minute,
		build: func(ctx context.Context, w objectWrite[namespaceOffloadingModel], nsoff *offloadingv1beta1.NamespaceOffloading) error {
			return w.plan.fill(ctx, nsoff)
		},
		read:        nsoffRefresh,
		written:     nsoffRefresh,
		createError: nsoffCreateError,
		identity:    objectIdentity("namespace"),
	}
	return r
}

// Schema describes liqo_namespace_offloading.
func (r *namespaceOffloadingResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = objectSchema(ctx, "[cluster/]namespace", timeouts.Opts{Delete: true},
		"Offloads a namespace of the consumer cluster to its provider clusters: the "+
			"`NamespaceOffloading` (`offloading.liqo.io/v1beta1`) of the namespace, which the API requires to be named "+
			"`offloading` (so there is at most one per namespace). The controllers create a twin namespace in each "+
			"selected provider cluster, named after `namespace_mapping_strategy`. The pod offloading strategy and "+
			"the cluster selector change in place; the naming of the remote namespace cannot (see "+
			"`namespace_mapping_strategy`). Destroying it waits until the object is gone, that is until the "+
			"controllers have removed the remote namespaces.",
		map[string]schema.Attribute{
			"namespace": namespaceAttribute("Namespace to offload; it must exist. Changing it replaces the offloading."),
			"namespace_mapping_strategy": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(string(offloadingv1beta1.DefaultNameMappingStrategyType)),
				MarkdownDescription: "How the remote namespaces are named: `DefaultName` (default: `<namespace>-<consumer " +
					"cluster ID>`, which avoids conflicts), `EnforceSameName` (the local name) or `SelectedName` " +
					"(`remote_namespace_name`). Changing it replaces the offloading: the API would accept the change, " +
					"but the controllers would then create the remote namespaces under the new name and leave the old " +
					"ones (and what runs in them) behind, so the provider deletes the offloading (which removes the " +
					"remote namespaces) and creates it again.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators: []validator.String{stringvalidator.OneOf(string(offloadingv1beta1.EnforceSameNameMappingStrategyType),
					string(offloadingv1beta1.DefaultNameMappingStrategyType), string(offloadingv1beta1.SelectedNameMappingStrategyType))},
			},
			"remote_namespace_name": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Name of the remote namespaces. Set it if and only if `namespace_mapping_strategy` is " +
					"`SelectedName`; otherwise it is computed: the namespace's name for `EnforceSameName`, and for " +
					"`DefaultName` the name the controllers report (`status.remoteNamespaceName`; null until they do). " +
					"Changing a configured value replaces the offloading, for the reason given in `namespace_mapping_strategy`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(),
					stringplanmodifier.RequiresReplaceIfConfigured()},
				Validators: dnsLabelValidators(),
			},
			"pod_offloading_strategy": enumAttribute(string(offloadingv1beta1.LocalAndRemotePodOffloadingStrategyType),
				"Where the namespace's pods may run: `LocalAndRemote` (default), `Local` or `Remote`. In place.",
				string(offloadingv1beta1.LocalPodOffloadingStrategyType), string(offloadingv1beta1.RemotePodOffloadingStrategyType),
				string(offloadingv1beta1.LocalAndRemotePodOffloadingStrategyType)),
			"cluster_selector": schema.ListNestedAttribute{
				Optional: true,
				MarkdownDescription: "Which provider clusters the namespace is offloaded to, matched against the labels of " +
					"their virtual nodes: a list of node selector terms, ORed; each term's `match_expressions` are ANDed. " +
					"Null or empty selects all clusters. In place. (`matchFields` terms are not supported: virtual nodes are " +
					"selected by their labels.)",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"match_expressions": schema.ListNestedAttribute{
						Optional:            true,
						MarkdownDescription: "Requirements on the virtual nodes' labels, all of which must hold.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"key": schema.StringAttribute{
								Required:            true,
								MarkdownDescription: "Label key, e.g. `topology.kubernetes.io/region`.",
								Validators:          []validator.String{stringvalidator.LengthBetween(1, 317)},
							},
							"operator": schema.StringAttribute{
								Required: true,
								MarkdownDescription: "`In`, `NotIn` (with one or more `values`), `Exists`, `DoesNotExist` (without " +
									"`values`), `Gt`, `Lt` (with one integer value).",
								Validators: []validator.String{stringvalidator.OneOf(nsoffOperators...)},
							},
							"values": schema.ListAttribute{
								Optional: true, ElementType: types.StringType,
								MarkdownDescription: "Label values, as the operator requires.",
							},
						}},
					},
				}},
			},
			"phase": computedString("Offloading phase reported by the controllers (`status.offloadingPhase`): `Ready`, " +
				"`NoClusterSelected`, `InProgress`, `SomeFailed`, `AllFailed` or `Terminating`; null until they report."),
		})
}

// ValidateConfig checks at plan time what the API checks at apply time: remote_namespace_name
// with SelectedName and only then, and the values each selector operator needs.
func (r *namespaceOffloadingResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	cfg, ok := modelOf[namespaceOffloadingModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	if !cfg.NamespaceMappingStrategy.IsUnknown() && !cfg.RemoteNamespaceName.IsUnknown() {
		selected := cfg.NamespaceMappingStrategy.ValueString() == string(offloadingv1beta1.SelectedNameMappingStrategyType)
		switch {
		case selected && cfg.RemoteNamespaceName.IsNull():
			resp.Diagnostics.AddAttributeError(path.Root("remote_namespace_name"), "Missing remote namespace name",
				"namespace_mapping_strategy = \"SelectedName\" needs remote_namespace_name: set it to the name the remote namespaces should have")
		case !selected && !cfg.RemoteNamespaceName.IsNull():
			strategy := cfg.NamespaceMappingStrategy.ValueString()
			if strategy == "" {
				strategy = string(offloadingv1beta1.DefaultNameMappingStrategyType) + " (the default)"
			}
			resp.Diagnostics.AddAttributeError(path.Root("remote_namespace_name"), "Unexpected remote namespace name",
				fmt.Sprintf("remote_namespace_name can only be set with namespace_mapping_strategy = \"SelectedName\", not %s: "+
					"set the strategy to SelectedName or remove remote_namespace_name", strategy))
		}
	}
	if cfg.ClusterSelector.IsNull() || cfg.ClusterSelector.IsUnknown() {
		return
	}
	var terms []nsoffTermModel
	resp.Diagnostics.Append(cfg.ClusterSelector.ElementsAs(ctx, &terms, false)...)
	for i, term := range terms {
		if term.MatchExpressions.IsNull() || term.MatchExpressions.IsUnknown() {
			continue
		}
		var exprs []nsoffExpressionModel
		resp.Diagnostics.Append(term.MatchExpressions.ElementsAs(ctx, &exprs, false)...)
		for j, e := range exprs {
			if e.Operator.IsUnknown() || e.Values.IsUnknown() {
				continue
			}
			p := path.Root("cluster_selector").AtListIndex(i).AtName("match_expressions").AtListIndex(j).AtName("values")
			var values []types.String
			if !e.Values.IsNull() {
				resp.Diagnostics.Append(e.Values.ElementsAs(ctx, &values, false)...)
			}
			op := e.Operator.ValueString()
			switch corev1.NodeSelectorOperator(op) {
			case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
				if len(values) == 0 {
					resp.Diagnostics.AddAttributeError(p, "Missing values", fmt.Sprintf("operator %s needs one or more values", op))
				}
			case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
				if len(values) > 0 {
					resp.Diagnostics.AddAttributeError(p, "Unexpected values", fmt.Sprintf("operator %s takes no values: remove them", op))
				}
			case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
				if len(values) != 1 {
					resp.Diagnostics.AddAttributeError(p, "Wrong number of values", fmt.Sprintf("operator %s takes exactly one integer value", op))
				} else if !values[0].IsUnknown() {
					if _, err := strconv.ParseInt(values[0].ValueString(), 10, 64); err != nil {
						resp.Diagnostics.AddAttributeError(p, "Invalid value",
							fmt.Sprintf("operator %s takes an integer value, not %q", op, values[0].ValueString()))
					}
				}
			}
		}
	}
}

// ModifyPlan shows the remote namespace name in the plan when the strategy gives it.
func (r *namespaceOffloadingResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	plan, ok := plannedModel[namespaceOffloadingModel](ctx, &r.clusterResource, req, resp)
	if ok && plan.NamespaceMappingStrategy.ValueString() == string(offloadingv1beta1.EnforceSameNameMappingStrategyType) {
		planDerivedDefault(ctx, resp, "remote_namespace_name", plan.RemoteNamespaceName, plan.Namespace, sameValue)
	}
}

// selector converts the cluster_selector attribute to the API's node selector (nil when null).
func (m *namespaceOffloadingModel) selector(ctx context.Context) (*corev1.NodeSelector, error) {
	if m.ClusterSelector.IsNull() || m.ClusterSelector.IsUnknown() {
		return nil, nil
	}
	var terms []nsoffTermModel
	if d := m.ClusterSelector.ElementsAs(ctx, &terms, false); d.HasError() {
		return nil, fmt.Errorf("reading cluster_selector: %v", d)
	}
	out := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{}}
	for _, t := range terms {
		term := corev1.NodeSelectorTerm{}
		if !t.MatchExpressions.IsNull() && !t.MatchExpressions.IsUnknown() {
			var exprs []nsoffExpressionModel
			if d := t.MatchExpressions.ElementsAs(ctx, &exprs, false); d.HasError() {
				return nil, fmt.Errorf("reading cluster_selector: %v", d)
			}
			for _, e := range exprs {
				req := corev1.NodeSelectorRequirement{Key: e.Key.ValueString(), Operator: corev1.NodeSelectorOperator(e.Operator.ValueString())}
				if !e.Values.IsNull() && !e.Values.IsUnknown() {
					if d := e.Values.ElementsAs(ctx, &req.Values, false); d.HasError() {
						return nil, fmt.Errorf("reading cluster_selector: %v", d)
					}
				}
				term.MatchExpressions = append(term.MatchExpressions, req)
			}
		}
		out.NodeSelectorTerms = append(out.NodeSelectorTerms, term)
	}
	return out, nil
}

// nsoffNormalize makes selectors comparable: no selector and no terms are the same, and so are
// empty and absent lists.
func nsoffNormalize(s *corev1.NodeSelector) []corev1.NodeSelectorTerm {
	if s == nil || len(s.NodeSelectorTerms) == 0 {
		return nil
	}
	out := make([]corev1.NodeSelectorTerm, len(s.NodeSelectorTerms))
	for i, t := range s.NodeSelectorTerms {
		var exprs []corev1.NodeSelectorRequirement
		for _, e := range t.MatchExpressions {
			n := corev1.NodeSelectorRequirement{Key: e.Key, Operator: e.Operator}
			if len(e.Values) > 0 {
				n.Values = append([]string(nil), e.Values...)
			}
			exprs = append(exprs, n)
		}
		out[i] = corev1.NodeSelectorTerm{MatchExpressions: exprs}
	}
	return out
}

// nsoffSelectorValue converts the API's node selector to the cluster_selector attribute.
func nsoffSelectorValue(ctx context.Context, s *corev1.NodeSelector) (types.List, error) {
	terms := nsoffNormalize(s)
	if terms == nil {
		return types.ListNull(nsoffTermType), nil
	}
	models := make([]nsoffTermModel, len(terms))
	for i, t := range terms {
		exprs := make([]nsoffExpressionModel, len(t.MatchExpressions))
		for j, e := range t.MatchExpressions {
			values := types.ListNull(types.StringType)
			if len(e.Values) > 0 {
				v, d := types.ListValueFrom(ctx, types.StringType, e.Values)
				if d.HasError() {
					return types.ListNull(nsoffTermType), fmt.Errorf("building cluster_selector: %v", d)
				}
				values = v
			}
			exprs[j] = nsoffExpressionModel{Key: types.StringValue(e.Key), Operator: types.StringValue(string(e.Operator)), Values: values}
		}
		me := types.ListNull(nsoffExpressionType)
		if len(exprs) > 0 {
			v, d := types.ListValueFrom(ctx, nsoffExpressionType, exprs)
			if d.HasError() {
				return types.ListNull(nsoffTermType), fmt.Errorf("building cluster_selector: %v", d)
			}
			me = v
		}
		models[i] = nsoffTermModel{MatchExpressions: me}
	}
	v, d := types.ListValueFrom(ctx, nsoffTermType, models)
	if d.HasError() {
		return types.ListNull(nsoffTermType), fmt.Errorf("building cluster_selector: %v", d)
	}
	return v, nil
}

// fill writes the desired spec into the object.
func (m *namespaceOffloadingModel) fill(ctx context.Context, nsoff *offloadingv1beta1.NamespaceOffloading) error {
	sel, err := m.selector(ctx)
	if err != nil {
		return err
	}
	nsoff.Spec.NamespaceMappingStrategy = offloadingv1beta1.NamespaceMappingStrategyType(m.NamespaceMappingStrategy.ValueString())
	nsoff.Spec.PodOffloadingStrategy = offloadingv1beta1.PodOffloadingStrategyType(m.PodOffloadingStrategy.ValueString())
	nsoff.Spec.RemoteNamespaceName = ""
	if nsoff.Spec.NamespaceMappingStrategy == offloadingv1beta1.SelectedNameMappingStrategyType {
		nsoff.Spec.RemoteNamespaceName = m.RemoteNamespaceName.ValueString()
	}
	nsoff.Spec.ClusterSelector = sel
	return nil
}

// refresh sets the model from the object; a selector equal to the configured one keeps its
// configured form (null and empty lists alike).
func (m *namespaceOffloadingModel) refresh(ctx context.Context, clusterName string, nsoff *offloadingv1beta1.NamespaceOffloading) error {
	m.ID = types.StringValue(objectID(clusterName, "", nsoff.Namespace))
	m.Namespace = types.StringValue(nsoff.Namespace)
	m.NamespaceMappingStrategy = stringOrNull(string(nsoff.Spec.NamespaceMappingStrategy))
	m.PodOffloadingStrategy = stringOrNull(string(nsoff.Spec.PodOffloadingStrategy))
	switch {
	case nsoff.Spec.RemoteNamespaceName != "":
		m.RemoteNamespaceName = types.StringValue(nsoff.Spec.RemoteNamespaceName)
	case nsoff.Status.RemoteNamespaceName != "":
		m.RemoteNamespaceName = types.StringValue(nsoff.Status.RemoteNamespaceName)
	case nsoff.Spec.NamespaceMappingStrategy == offloadingv1beta1.EnforceSameNameMappingStrategyType:
		m.RemoteNamespaceName = types.StringValue(nsoff.Namespace)
	default:
		m.RemoteNamespaceName = types.StringNull()
	}
	prior, err := m.selector(ctx)
	if err != nil {
		return err
	}
	if m.ClusterSelector.IsUnknown() || !reflect.DeepEqual(nsoffNormalize(prior), nsoffNormalize(nsoff.Spec.ClusterSelector)) {
		v, err := nsoffSelectorValue(ctx, nsoff.Spec.ClusterSelector)
		if err != nil {
			return err
		}
		m.ClusterSelector = v
	}
	m.Phase = stringOrNull(string(nsoff.Status.OffloadingPhase))
	return nil
}

// ImportState takes `[cluster/]namespace` or the identity: the object's name is always
// offloading.
func (r *namespaceOffloadingResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	// The ID has the form of a cluster-scoped object's: its name part is the namespace.
	t, err := r.identityOf().target(ctx, req, objectIDParts(false))
	if err != nil {
		resp.Diagnostics.AddError("Importing namespace offloading",
			fmt.Sprintf("%v: the ID of a namespace offloading is `[cluster/]namespace` (the object is always named %s)",
				err, consts.NamespaceOffloadingName))
		return
	}
	r.identityOf().save(ctx, t, resp)
}

func (m *namespaceOffloadingModel) target() (types.String, client.ObjectKey) {
	return m.Cluster, client.ObjectKey{Namespace: m.Namespace.ValueString(), Name: consts.NamespaceOffloadingName}
}

// setID sets the ID `[cluster/]namespace`: the object's name is always the same.
func (m *namespaceOffloadingModel) setID(cluster string, key client.ObjectKey) {
	m.ID = types.StringValue(objectID(cluster, "", key.Namespace))
}

func (m *namespaceOffloadingModel) timeoutsValue() timeouts.Value { return m.Timeouts }

// nsoffRefresh sets the model from the object.
func nsoffRefresh(ctx context.Context, c *clusterClient, m *namespaceOffloadingModel, nsoff *offloadingv1beta1.NamespaceOffloading) error {
	return m.refresh(ctx, c.name, nsoff)
}

// nsoffCreateError explains a failed create: the namespace is offloaded already (import it),
// or it does not exist.
func nsoffCreateError(c *clusterClient, nsoff *offloadingv1beta1.NamespaceOffloading, err error) string {
	ref := objectID("", nsoff.Namespace, nsoff.Name)
	switch {
	case apierrors.IsAlreadyExists(err):
		return fmt.Sprintf("namespace %s of %s is already offloaded (NamespaceOffloading %s exists): import it with "+
			"`terraform import <address> %s`", nsoff.Namespace, c.describe(), ref, objectID(c.name, "", nsoff.Namespace))
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("creating NamespaceOffloading %s in %s: namespace %s does not exist: create it first: %v",
			ref, c.describe(), nsoff.Namespace, err)
	}
	return fmt.Sprintf("creating NamespaceOffloading %s in %s: %v", ref, c.describe(), err)
}
