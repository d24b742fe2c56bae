package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/identities"
)

// virtualNodeDefaultTimeout bounds the create and update waits unless timeouts says otherwise.
const virtualNodeDefaultTimeout = 2 * time.Minute

// virtualNodeResource is liqo_virtual_node: a VirtualNode of the consumer cluster made from one
// of its ResourceSlices, as `liqoctl create virtualnode --resource-slice-name` makes it.
type virtualNodeResource struct {
	objectResource[virtualNodeModel, *virtualNodeModel, *offv1beta1.VirtualNode]
}

type virtualNodeModel struct {
	namespacedObject
	ProviderClusterID    types.String `tfsdk:"provider_cluster_id"`
	ResourceSliceName    types.String `tfsdk:"resource_slice_name"`
	KubeconfigSecretName types.String `tfsdk:"kubeconfig_secret_name"`
	CreateNode           types.Bool   `tfsdk:"create_node"`
	DisableNetworkCheck  types.Bool   `tfsdk:"disable_network_check"`
	WaitForReady         types.Bool   `tfsdk:"wait_for_ready"`
	Labels               types.Map    `tfsdk:"labels"`
	OffloadingPatch      types.Object `tfsdk:"offloading_patch"`
	Capacity             types.Map    `tfsdk:"capacity"`
	NodeStatus           types.String `tfsdk:"node_status"`
}

// virtualNodePatchModel is the offloading_patch attribute.
type virtualNodePatchModel struct {
	NodeSelector            types.Map                    `tfsdk:"node_selector"`
	Tolerations             []virtualNodeTolerationModel `tfsdk:"tolerations"`
	NodeAffinityTerms       []virtualNodeTermModel       `tfsdk:"node_affinity_terms"`
	RuntimeClassName        types.String                 `tfsdk:"runtime_class_name"`
	LabelsNotReflected      types.List                   `tfsdk:"labels_not_reflected"`
	AnnotationsNotReflected types.List                   `tfsdk:"annotations_not_reflected"`
}

type virtualNodeTolerationModel struct {
	Key               types.String `tfsdk:"key"`
	Operator          types.String `tfsdk:"operator"`
	Value             types.String `tfsdk:"value"`
	Effect            types.String `tfsdk:"effect"`
	TolerationSeconds types.Int64  `tfsdk:"toleration_seconds"`
}

type virtualNodeTermModel struct {
	MatchExpressions []virtualNodeExpressionModel `tfsdk:"match_expressions"`
}

type virtualNodeExpressionModel struct {
	Key      types.String `tfsdk:"key"`
	Operator types.String `tfsdk:"operator"`
	Values   types.List   `tfsdk:"values"`
}

var (
	virtualNodeTolerationType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"key": types.StringType, "operator": types.StringType, "value": types.StringType, "effect": types.StringType,
		"toleration_seconds": types.Int64Type,
	}}
	virtualNodeExpressionType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"key": types.StringType, "operator": types.StringType, "values": types.ListType{ElemType: types.StringType},
	}}
	virtualNodeTermType  = types.ObjectType{AttrTypes: map[string]attr.Type{"match_expressions": types.ListType{ElemType: virtualNodeExpressionType}}}
	virtualNodePatchType = map[string]attr.Type{
		"node_selector":             types.MapType{ElemType: types.StringType},
		"tolerations":               types.ListType{ElemType: virtualNodeTolerationType},
		"node_affinity_terms":       types.ListType{ElemType: virtualNodeTermType},
		"runtime_class_name":        types.StringType,
		"labels_not_reflected":      types.ListType{ElemType: types.StringType},
		"annotations_not_reflected": types.ListType{ElemType: types.StringType},
	}
)

func newVirtualNodeResource() resource.Resource {
	r := &virtualNodeResource{}
	r.objectKind = objectKind[virtualNodeModel, *offv1beta1.VirtualNode]{
		typeName: "_virtual_node",
		kind:     "VirtualNode", noun: "virtual node", needLiqo: true, namespaced: true, timeout: virtualNodeDefaultTimeout,
		build: func(ctx context.Context, w objectWrite[virtualNodeModel], vn *offv1beta1.VirtualNode) error {
			return w.plan.fill(ctx, w.cluster, vn)
		},
		read:    virtualNodeRefresh,
		written: virtualNodeRefresh,
		waits:   func(plan *virtualNodeModel) bool { return plan.WaitForReady.ValueBool() },
		wait:    virtualNodeWaitReady,
	}
	return r
}

// nonEmptyStringList is an optional list of strings that, when set, names at least one.
func nonEmptyStringList(description string) schema.ListAttribute {
	return schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: description,
		Validators: []validator.List{listvalidator.SizeAtLeast(1)}}
}

// Schema describes liqo_virtual_node.
func (r *virtualNodeResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	labelMap := func(description string) schema.MapAttribute {
		return schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: description,
			Validators: []validator.Map{mapvalidator.SizeAtLeast(1), mapvalidator.KeysAre(stringvalidator.RegexMatches(
				resourceSliceResourceNamePattern, "must be a label key such as example.com/pool"))}}
	}
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/name", timeouts.Opts{Create: true, Update: true, Delete: true},
		"A virtual node of the consumer cluster standing for the resources a provider granted in one ResourceSlice: a "+
			"`VirtualNode` (`offloading.liqo.io/v1beta1`) in the consumer's tenant namespace, as `liqoctl create virtualnode "+
			"--resource-slice-name` makes it. The Node (named as the resource) offers what the slice was granted; pods "+
			"scheduled on it run on the provider with the `offloading_patch` applied (node selector, tolerations, node "+
			"affinity, runtime class), so several virtual nodes of one peering can each target a part of the provider. "+
			"Make the slices with `liqo_resource_slice` (or `liqo_peering`) with `create_virtual_node = false`, so that "+
			"the controllers do not make a virtual node of their own for them. Changes apply in place but for the names "+
			"and the provider; destroy drains the node (its pods' copies on the provider go) and removes it.",
		map[string]schema.Attribute{
			"name": requiredReplaceString("Name of the VirtualNode, and of its Node. Changing it replaces the virtual node.",
				dnsSubdomain("must be a DNS subdomain: lower-case letters, digits, '-' and '.'")...),
			"namespace": derivedDefaultString("Tenant namespace of the peering with the provider; default: "+
				"`liqo-tenant-<provider_cluster_id>`. Changing it replaces the virtual node.", dnsLabelValidators()...),
			"provider_cluster_id": clusterIDAttribute("Cluster ID of the provider the node stands for (`spec.clusterID`, " +
				"immutable in the API): changing it replaces the virtual node."),
			"resource_slice_name": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Name of the consumer's ResourceSlice, in `namespace`, whose grant the node offers. It " +
					"must be granted when the node is written. Changing it (or a new grant, at the next apply) changes the node " +
					"in place.",
				Validators: dnsSubdomain("must be a DNS subdomain: lower-case letters, digits, '-' and '.'"),
			},
			"kubeconfig_secret_name": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Secret in `namespace` holding the consumer's kubeconfig of the provider; default: as " +
					"upstream Liqo's, the Secret of the slice's own identity (`resourceslice-<slice>`, made once the provider " +
					"signed the slice's certificate), else the control-plane identity's, which the peering's authentication " +
					"made. A node left on the control-plane Secret moves to the slice's once it exists (the controller manager " +
					"moves it; the next refresh reads the new name, with no change planned); a Secret named here otherwise stays.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
				Validators:    dnsSubdomain("must be a DNS subdomain: lower-case letters, digits, '-' and '.'"),
			},
			"create_node": flagAttribute(true, "Create the Node, so pods can be scheduled on it (`spec.createNode`); "+
				"default `true`. With `false` the node is drained and removed, the VirtualNode kept. In place."),
			"disable_network_check": flagAttribute(false, "Leave the inter-cluster network out of the node's conditions "+
				"(`spec.disableNetworkCheck`, for a peering without networking); default `false`. In place."),
			"wait_for_ready": flagAttribute(true, "Wait, on create and update, until the Node is Ready (or, with "+
				"`create_node = false`, drained and gone); default `true`. Bounded by `timeouts` (default 2m)."),
			"labels": labelMap("Labels added to the Node (`spec.labels`), e.g. to select it with a node selector. In place."),
			"offloading_patch": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "What the virtual kubelet changes on the pods it offloads through this node " +
					"(`spec.offloadingPatch`). In place: pods offloaded afterwards get the new patch.",
				Attributes: map[string]schema.Attribute{
					"node_selector": labelMap("Added to the offloaded pods' node selector on the provider."),
					"tolerations": schema.ListNestedAttribute{
						Optional: true, MarkdownDescription: "Added to the offloaded pods' tolerations on the provider.",
						Validators: []validator.List{listvalidator.SizeAtLeast(1)},
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"key": optionalString("Taint key the toleration matches (empty with `Exists`: every taint)."),
							"operator": optionalString("`Equal` (default) or `Exists`.",
								stringvalidator.OneOf(string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists))),
							"value": optionalString("Taint value the toleration matches (with `Equal`)."),
							"effect": optionalString("`NoSchedule`, `PreferNoSchedule` or `NoExecute` (empty: every effect).",
								stringvalidator.OneOf(string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule),
									string(corev1.TaintEffectNoExecute))),
							"toleration_seconds": schema.Int64Attribute{Optional: true,
								MarkdownDescription: "How long a `NoExecute` taint is tolerated (default: forever)."},
						}},
					},
					"node_affinity_terms": schema.ListNestedAttribute{
						Optional: true,
						MarkdownDescription: "Node selector terms the offloaded pods require on the provider (node affinity " +
							"`requiredDuringSchedulingIgnoredDuringExecution`): a node must match one term, that is every " +
							"expression of it.",
						Validators: []validator.List{listvalidator.SizeAtLeast(1)},
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"match_expressions": schema.ListNestedAttribute{
								Required: true, MarkdownDescription: "Expressions over node labels.",
								Validators: []validator.List{listvalidator.SizeAtLeast(1)},
								NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
									"key": schema.StringAttribute{Required: true, MarkdownDescription: "Node label key."},
									"operator": schema.StringAttribute{Required: true,
										MarkdownDescription: "`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt` or `Lt`.",
										Validators:          []validator.String{stringvalidator.OneOf("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")}},
									"values": nonEmptyStringList("Values (for `In`, `NotIn`: one or more; `Gt`, `Lt`: one integer; none otherwise)."),
								}},
							},
						}},
					},
					"runtime_class_name": optionalString("Runtime class of the offloaded pods that name none of their own.",
						dnsSubdomain("must be a DNS subdomain: lower-case letters, digits, '-' and '.'")...),
					"labels_not_reflected":      nonEmptyStringList("Keys of the pods' labels not copied to the provider."),
					"annotations_not_reflected": nonEmptyStringList("Keys of the pods' annotations not copied to the provider."),
				},
			},
			"capacity": computedStringMap("What the node offers, by resource name: the slice's grant when it was written " +
				"(`spec.resourceQuota.hard`)."),
			"node_status": computedString("State of the Node: `Ready`, `NotReady`, or `None` (no Node: `create_node = false`, " +
				"or not made yet)."),
		})
}

// ModifyPlan shows the default namespace in the plan, and the capacity as unknown when the node
// is written again (it is read from the slice then).
func (r *virtualNodeResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if plan, ok := plannedModel[virtualNodeModel](ctx, &r.clusterResource, req, resp); ok {
		planDerivedDefault(ctx, resp, "namespace", plan.Namespace, plan.ProviderClusterID, consts.TenantNamespace)
	}
}

// fill writes the plan into vn, with the capacity the slice was granted and, unless one is
// named, the kubeconfig Secret identities.VirtualNodeSecret gives (the slice's identity, else the
// provider's control-plane identity).
func (m *virtualNodeModel) fill(ctx context.Context, c *clusterClient, vn *offv1beta1.VirtualNode) error {
	ns, provider := vn.Namespace, corev1beta1.ClusterID(m.ProviderClusterID.ValueString())
	if ns == "" {
		ns = m.Namespace.ValueString()
	}
	slice := &authv1beta1.ResourceSlice{}
	sliceKey := client.ObjectKey{Namespace: ns, Name: m.ResourceSliceName.ValueString()}
	if err := c.ctrl.Get(ctx, sliceKey, slice); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("resource_slice_name: ResourceSlice %s does not exist in %s: create it first (liqo_resource_slice, "+
				"or liqo_peering with create_virtual_node = false) and reference its name", sliceKey, c.describe())
		}
		return fmt.Errorf("reading ResourceSlice %s in %s: %w", sliceKey, c.describe(), err)
	}
	if slice.Spec.ProviderClusterID != nil && *slice.Spec.ProviderClusterID != provider {
		return fmt.Errorf("resource_slice_name: ResourceSlice %s asks provider %s, not provider_cluster_id %s: name a slice of that provider",
			sliceKey, *slice.Spec.ProviderClusterID, provider)
	}
	if len(slice.Status.Resources) == 0 {
		return fmt.Errorf("resource_slice_name: ResourceSlice %s in %s is not granted yet (%s): set wait_for_acceptance on "+
			"liqo_resource_slice, or apply again once the provider granted it", sliceKey, c.describe(), resourceSliceDescribe(slice))
	}
	secret := m.KubeconfigSecretName.ValueString()
	if secret == "" {
		var err error
		if secret, err = identities.VirtualNodeSecret(ctx, c.ctrl, slice); err != nil {
			return err
		}
		if secret == "" {
			return fmt.Errorf("kubeconfig_secret_name: no identity of ResourceSlice %s, nor control-plane identity of provider %s, in %s "+
				"of %s: peer the two clusters' authentication first (liqo_peering, or liqo_identity), or name the Secret", sliceKey, provider, ns, c.describe())
		}
	}
	patch, err := m.patch(ctx)
	if err != nil {
		return err
	}
	labels, err := stringMapOf(ctx, m.Labels)
	if err != nil {
		return fmt.Errorf("reading labels: %w", err)
	}
	forge.MutateVirtualNode(vn, forge.VirtualNodeOptions{ProviderID: string(provider), ResourceSlice: slice.Name,
		KubeconfigSecret: secret, Resources: slice.Status.Resources, NodeLabels: labels,
		CreateNode: m.CreateNode.ValueBool(), DisableNetworkCheck: ptr.To(m.DisableNetworkCheck.ValueBool()), OffloadingPatch: patch})
	return nil
}

// stringMapOf reads a map of strings (nil when null).
func stringMapOf(ctx context.Context, m types.Map) (map[string]string, error) {
	if m.IsNull() || m.IsUnknown() {
		return nil, nil
	}
	out := map[string]string{}
	if d := m.ElementsAs(ctx, &out, false); d.HasError() {
		return nil, diagsError(d)
	}
	return out, nil
}

// stringListOf reads a list of strings (nil when null).
func stringListOf(ctx context.Context, l types.List) ([]string, error) {
	out, d := nwListStrings(ctx, l)
	return out, diagsError(d)
}

// stringMapValue makes a map attribute of strings; null when empty.
func stringMapValue(ctx context.Context, m map[string]string) (types.Map, error) {
	if len(m) == 0 {
		return types.MapNull(types.StringType), nil
	}
	v, d := types.MapValueFrom(ctx, types.StringType, m)
	return v, diagsError(d)
}

// patch is the offloading patch the model asks for (nil when none).
func (m *virtualNodeModel) patch(ctx context.Context) (*offv1beta1.OffloadingPatch, error) {
	if m.OffloadingPatch.IsNull() || m.OffloadingPatch.IsUnknown() {
		return nil, nil
	}
	var pm virtualNodePatchModel
	if d := m.OffloadingPatch.As(ctx, &pm, basetypes.ObjectAsOptions{}); d.HasError() {
		return nil, fmt.Errorf("reading offloading_patch: %w", diagsError(d))
	}
	p := &offv1beta1.OffloadingPatch{}
	var err error
	if p.NodeSelector, err = stringMapOf(ctx, pm.NodeSelector); err != nil {
		return nil, fmt.Errorf("reading offloading_patch.node_selector: %w", err)
	}
	if p.LabelsNotReflected, err = stringListOf(ctx, pm.LabelsNotReflected); err != nil {
		return nil, fmt.Errorf("reading offloading_patch.labels_not_reflected: %w", err)
	}
	if p.AnnotationsNotReflected, err = stringListOf(ctx, pm.AnnotationsNotReflected); err != nil {
		return nil, fmt.Errorf("reading offloading_patch.annotations_not_reflected: %w", err)
	}
	if !pm.RuntimeClassName.IsNull() {
		p.RuntimeClassName = new(string)
		*p.RuntimeClassName = pm.RuntimeClassName.ValueString()
	}
	for _, t := range pm.Tolerations {
		tol := corev1.Toleration{Key: t.Key.ValueString(), Operator: corev1.TolerationOperator(t.Operator.ValueString()),
			Value: t.Value.ValueString(), Effect: corev1.TaintEffect(t.Effect.ValueString())}
		if !t.TolerationSeconds.IsNull() {
			tol.TolerationSeconds = new(int64)
			*tol.TolerationSeconds = t.TolerationSeconds.ValueInt64()
		}
		p.Tolerations = append(p.Tolerations, tol)
	}
	if len(pm.NodeAffinityTerms) > 0 {
		sel := &corev1.NodeSelector{}
		for i, term := range pm.NodeAffinityTerms {
			var nt corev1.NodeSelectorTerm
			for j, e := range term.MatchExpressions {
				values, err := stringListOf(ctx, e.Values)
				if err != nil {
					return nil, fmt.Errorf("reading offloading_patch.node_affinity_terms[%d].match_expressions[%d].values: %w", i, j, err)
				}
				nt.MatchExpressions = append(nt.MatchExpressions, corev1.NodeSelectorRequirement{Key: e.Key.ValueString(),
					Operator: corev1.NodeSelectorOperator(e.Operator.ValueString()), Values: values})
			}
			sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, nt)
		}
		p.Affinity = &offv1beta1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
	}
	return p, nil
}

// patchValue is the offloading_patch attribute of a VirtualNode's patch (null when none).
func patchValue(ctx context.Context, p *offv1beta1.OffloadingPatch) (types.Object, error) {
	if p == nil {
		return types.ObjectNull(virtualNodePatchType), nil
	}
	strList := func(v []string) types.List {
		l, _ := nwStringList(ctx, v) // strings always convert
		return l
	}
	strMap := func(v map[string]string) types.Map {
		m, _ := stringMapValue(ctx, v) // strings always convert
		return m
	}
	pm := virtualNodePatchModel{NodeSelector: strMap(p.NodeSelector), LabelsNotReflected: strList(p.LabelsNotReflected),
		AnnotationsNotReflected: strList(p.AnnotationsNotReflected), RuntimeClassName: types.StringNull()}
	if p.RuntimeClassName != nil {
		pm.RuntimeClassName = types.StringValue(*p.RuntimeClassName)
	}
	for _, t := range p.Tolerations {
		tm := virtualNodeTolerationModel{Key: stringOrNull(t.Key), Operator: stringOrNull(string(t.Operator)),
			Value: stringOrNull(t.Value), Effect: stringOrNull(string(t.Effect)), TolerationSeconds: types.Int64Null()}
		if t.TolerationSeconds != nil {
			tm.TolerationSeconds = types.Int64Value(*t.TolerationSeconds)
		}
		pm.Tolerations = append(pm.Tolerations, tm)
	}
	if a := p.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			var tm virtualNodeTermModel
			for _, e := range term.MatchExpressions {
				tm.MatchExpressions = append(tm.MatchExpressions, virtualNodeExpressionModel{Key: types.StringValue(e.Key),
					Operator: types.StringValue(string(e.Operator)), Values: strList(e.Values)})
			}
			pm.NodeAffinityTerms = append(pm.NodeAffinityTerms, tm)
		}
	}
	v, d := types.ObjectValueFrom(ctx, virtualNodePatchType, pm)
	if d.HasError() {
		return types.ObjectNull(virtualNodePatchType), fmt.Errorf("building offloading_patch: %w", diagsError(d))
	}
	return v, nil
}

// virtualNodeRefresh sets the model from the VirtualNode and its Node.
func virtualNodeRefresh(ctx context.Context, c *clusterClient, m *virtualNodeModel, vn *offv1beta1.VirtualNode) error {
	m.Name, m.Namespace = types.StringValue(vn.Name), types.StringValue(vn.Namespace)
	m.ProviderClusterID = stringOrNull(string(vn.Spec.ClusterID))
	m.ResourceSliceName = stringOrNull(vn.Labels[consts.ResourceSliceNameLabel])
	m.KubeconfigSecretName = types.StringNull()
	if vn.Spec.KubeconfigSecretRef != nil {
		m.KubeconfigSecretName = stringOrNull(vn.Spec.KubeconfigSecretRef.Name)
	}
	m.CreateNode = types.BoolValue(vn.Spec.CreateNode == nil || *vn.Spec.CreateNode)
	m.DisableNetworkCheck = types.BoolValue(vn.Spec.DisableNetworkCheck != nil && *vn.Spec.DisableNetworkCheck)
	if m.WaitForReady.IsNull() || m.WaitForReady.IsUnknown() {
		m.WaitForReady = types.BoolValue(true)
	}
	var err error
	if m.Labels, err = stringMapValue(ctx, vn.Spec.Labels); err != nil {
		return fmt.Errorf("building labels: %w", err)
	}
	if m.OffloadingPatch, err = patchValue(ctx, vn.Spec.OffloadingPatch); err != nil {
		return err
	}
	if m.Capacity, err = resourceListValue(ctx, vn.Spec.ResourceQuota.Hard); err != nil {
		return fmt.Errorf("building capacity: %w", err)
	}
	status, err := nodeStatus(ctx, c, vn.Name)
	if err != nil {
		return err
	}
	m.NodeStatus = types.StringValue(status)
	return nil
}

// nodeStatus is the state of the Node named name: Ready, NotReady or None.
func nodeStatus(ctx context.Context, c *clusterClient, name string) (string, error) {
	node := &corev1.Node{}
	err := c.ctrl.Get(ctx, client.ObjectKey{Name: name}, node)
	switch {
	case apierrors.IsNotFound(err):
		return "None", nil
	case err != nil:
		return "", fmt.Errorf("reading node %s in %s: %w", name, c.describe(), err)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return "Ready", nil
		}
	}
	return "NotReady", nil
}

// virtualNodeWaitReady waits until the VirtualNode's Node is Ready, or gone with create_node =
// false (drained); it returns the VirtualNode last seen.
func virtualNodeWaitReady(ctx context.Context, c *clusterClient, plan *virtualNodeModel, vn *offv1beta1.VirtualNode,
	timeout time.Duration, op string,
) (*offv1beta1.VirtualNode, error) {
	want, last := "Ready", "not made yet"
	if !plan.CreateNode.ValueBool() {
		want, last = "None", "not looked at yet"
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		status, err := nodeStatus(ctx, c, vn.Name)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = status
		return status == want, nil
	})
	if err != nil && want == "None" {
		return nil, fmt.Errorf("the Node of VirtualNode %s in %s (liqo_virtual_node, create_node = false) is not gone after %s "+
			"(last: %s): its pods are being drained; look at what holds them, or raise timeouts.%s",
			objectID("", vn.Namespace, vn.Name), c.describe(), timeout, last, op)
	}
	if err != nil {
		return nil, fmt.Errorf("the Node of VirtualNode %s in %s (liqo_virtual_node) is not Ready after %s (last: %s): check that the "+
			"liqo controller manager runs and that the provider can be reached with Secret %s, or raise timeouts.%s",
			objectID("", vn.Namespace, vn.Name), c.describe(), timeout, last, vn.Spec.KubeconfigSecretRef.Name, op)
	}
	seen := &offv1beta1.VirtualNode{}
	if err := c.ctrl.Get(ctx, client.ObjectKeyFromObject(vn), seen); err != nil {
		return nil, fmt.Errorf("reading VirtualNode %s in %s: %w", objectID("", vn.Namespace, vn.Name), c.describe(), err)
	}
	return seen, nil
}
