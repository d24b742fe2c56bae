package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/action/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// tenantCordonDefaultTimeout bounds an invocation unless timeouts.invoke says otherwise: a drain
// waits for the consumer to withdraw its pods.
const tenantCordonDefaultTimeout = 5 * time.Minute

// tenantCordonAction is liqo_tenant_cordon: it sets a Tenant's administrative state (Active,
// Cordoned or Drained) on the provider cluster and waits until the controllers have acted on
// it. One action for the three states, like liqo_tenant's tenant_condition attribute: they are
// values of one field, and the wait differs only in what it looks for.
type tenantCordonAction struct {
	clusterAction
}

type tenantCordonModel struct {
	Cluster           types.String   `tfsdk:"cluster"`
	ConsumerClusterID types.String   `tfsdk:"consumer_cluster_id"`
	Namespace         types.String   `tfsdk:"namespace"`
	TenantCondition   types.String   `tfsdk:"tenant_condition"`
	Timeouts          timeouts.Value `tfsdk:"timeouts"`
}

var _ action.ActionWithModifyPlan = (*tenantCordonAction)(nil)

func newTenantCordonAction() action.Action {
	return &tenantCordonAction{clusterAction{clusterAttrs: []string{"cluster"}}}
}

// Metadata names the action liqo_tenant_cordon.
func (a *tenantCordonAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_tenant_cordon"
}

// Schema describes liqo_tenant_cordon.
func (a *tenantCordonAction) Schema(ctx context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = actionSchema(ctx, tenantCordonDefaultTimeout,
		"Cordons, drains or uncordons a consumer's Tenant on the provider cluster (`spec.tenantCondition`, as "+
			"`liqoctl cordon tenant`, `liqoctl drain tenant` and `liqoctl uncordon tenant` do), then waits until the "+
			"controllers have acted on it, reporting their progress:\n\n"+
			"* `Cordoned`: the consumer keeps the ResourceSlices already granted and its workloads, but no new slice "+
			"is accepted. Done when every slice of the consumer in the tenant namespace is either granted or denied "+
			"with reason `TenantCordoned`.\n"+
			"* `Drained`: every slice of the consumer is denied (reason `TenantDrained`), so its virtual nodes go and "+
			"its offloaded pods are evicted. Done when every slice is denied and no offloaded pod of the consumer "+
			"(ShadowPod, or pod, labelled `liqo.io/origin-cluster-id=<consumer>`) is left on the provider: the consumer's "+
			"controllers withdraw them, so a consumer that is down keeps the drain waiting.\n"+
			"* `Active`: the slices are negotiated again. Done when every slice is authenticated again (granted, or "+
			"denied for lack of resources, which the result names).\n\n"+
			"The Tenant keeps its access (cordoning or draining revokes nothing). Setting the state the Tenant "+
			"already has is allowed: the action then only waits for its effects.\n\n"+
			"**With other resources:** a Tenant managed by `liqo_tenant` takes back its `tenant_condition` at the "+
			"next apply: change that attribute instead. `liqo_peering` manages no condition, but a drained peering "+
			"shows as not Ready and its next apply fails until the Tenant is `Active` again: uncordon it first.\n\n"+
			"**Permissions of the Terraform user** in the provider cluster: `get`, `list`, `patch` on `tenants`, "+
			"`list` on `resourceslices` in the tenant namespace, and `list` on `shadowpods` and `pods` in all namespaces.",
		map[string]schema.Attribute{
			"cluster": actionClusterAttribute(false, "Key of the provider's `clusters` map naming the provider cluster, "+
				"which holds the Tenant; default: the provider block's own connection."),
			"consumer_cluster_id": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Cluster ID of the consumer whose Tenant to change (the Tenant's `spec.clusterID`).",
				Validators:          []validator.String{clusterIDValidator()},
			},
			"namespace": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Tenant namespace that holds the Tenant; default: Liqo's, " +
					"`liqo-tenant-<consumer_cluster_id>`.",
				Validators: namespaceNameValidators(),
			},
			"tenant_condition": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The state to set: `Cordoned` (no new ResourceSlices), `Drained` (the consumer's " +
					"workloads evicted) or `Active` (uncordon).",
				Validators: []validator.String{stringvalidator.OneOf(string(authv1beta1.TenantConditionActive),
					string(authv1beta1.TenantConditionCordoned), string(authv1beta1.TenantConditionDrained))},
			},
		})
}

// Invoke sets the Tenant's condition and waits for its effects.
func (a *tenantCordonAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	const summary = "Changing the tenant's condition"
	m, ok := modelOf[tenantCordonModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	ctx, cancel, timeout, ok := invocationContext(ctx, m.Timeouts, tenantCordonDefaultTimeout, resp)
	if !ok {
		return
	}
	defer cancel()
	c, err := a.client(ctx, m.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	consumer := m.ConsumerClusterID.ValueString()
	ns := consts.TenantNamespace(consumer)
	if !m.Namespace.IsNull() {
		ns = m.Namespace.ValueString()
	}
	want := authv1beta1.TenantCondition(m.TenantCondition.ValueString())
	t, err := tenantOfConsumer(ctx, c, ns, consumer)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	key := client.ObjectKeyFromObject(t)
	ref := fmt.Sprintf("Tenant %s in %s", objectID("", key.Namespace, key.Name), c.describe())
	if was := t.Spec.TenantCondition; was == want {
		progress(resp, "%s is already %s: waiting for its effects", ref, want)
	} else {
		err := patchObject(ctx, c, "Tenant", key, t, func() error {
			t.Spec.TenantCondition = want
			return nil
		})
		if err != nil {
			resp.Diagnostics.AddError(summary, err.Error()+"; the Terraform user needs `patch` on tenants")
			return
		}
		progress(resp, "%s: tenantCondition %s → %s", ref, conditionOrDefault(was), want)
	}
	w := tenantCordonWait{c: c, key: key, consumer: consumer, want: want}
	var result observation
	err = awaitReporting(ctx, resp, 500*time.Millisecond, timeout, fmt.Sprintf("the controllers to act on %s being %s", ref, want),
		func(ctx context.Context) (observation, error) {
			var err error
			result, err = w.observe(ctx)
			return result, err
		})
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error()+"; "+w.hint()+"; or raise timeouts.invoke")
		return
	}
	progress(resp, "done: %s is %s; %s", ref, want, result.seen)
}

// conditionOrDefault names a Tenant's condition, the API's default (Active) when unset.
func conditionOrDefault(c authv1beta1.TenantCondition) authv1beta1.TenantCondition {
	if c == "" {
		return authv1beta1.TenantConditionActive
	}
	return c
}

// tenantOfConsumer finds the one Tenant of the consumer in the namespace; the error names what
// to check.
func tenantOfConsumer(ctx context.Context, c *clusterClient, ns, consumer string) (*authv1beta1.Tenant, error) {
	tenants := &authv1beta1.TenantList{}
	if err := c.ctrl.List(ctx, tenants, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the Tenants in namespace %s of %s: %w; the Terraform user needs `list` on tenants", ns, c.describe(), err)
	}
	var found []*authv1beta1.Tenant
	for i := range tenants.Items {
		if t := &tenants.Items[i]; string(t.Spec.ClusterID) == consumer && t.DeletionTimestamp == nil {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no Tenant of consumer %q in namespace %s of %s: check consumer_cluster_id and cluster, or set "+
			"namespace to the tenant namespace that holds it", consumer, ns, c.describe())
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, t := range found {
		names[i] = t.Name
	}
	return nil, fmt.Errorf("namespace %s of %s holds %d Tenants of consumer %q (%s): the controllers use one of them; delete the others",
		ns, c.describe(), len(found), consumer, strings.Join(names, ", "))
}

// tenantCordonWait observes the effects of a Tenant's condition.
type tenantCordonWait struct {
	c        *clusterClient
	key      client.ObjectKey
	consumer string
	want     authv1beta1.TenantCondition
	// pods are the consumer's offloaded pods seen last (Drained).
	pods int
}

// sliceDecided tells whether the negotiation has decided a slice under condition want, and
// whether it grants it.
func sliceDecided(s *authv1beta1.ResourceSlice, want authv1beta1.TenantCondition) (decided, granted bool) {
	var auth, res *authv1beta1.ResourceSliceCondition
	for i := range s.Status.Conditions {
		switch c := &s.Status.Conditions[i]; c.Type {
		case authv1beta1.ResourceSliceConditionTypeAuthentication:
			auth = c
		case authv1beta1.ResourceSliceConditionTypeResources:
			res = c
		}
	}
	if auth == nil || res == nil {
		return false, false
	}
	granted = auth.Status == authv1beta1.ResourceSliceConditionAccepted && res.Status == authv1beta1.ResourceSliceConditionAccepted
	denied := func(reason string) bool {
		return auth.Status == authv1beta1.ResourceSliceConditionDenied && auth.Reason == reason
	}
	switch want {
	case authv1beta1.TenantConditionDrained:
		return denied("TenantDrained"), false
	case authv1beta1.TenantConditionCordoned:
		return granted || denied("TenantCordoned"), granted
	default:
		return auth.Status == authv1beta1.ResourceSliceConditionAccepted, granted
	}
}

// observe reads the Tenant, the consumer's ResourceSlices in its namespace and, for a drain,
// its offloaded pods on the cluster.
func (w *tenantCordonWait) observe(ctx context.Context) (observation, error) {
	t := &authv1beta1.Tenant{}
	if err := w.c.ctrl.Get(ctx, w.key, t); err != nil {
		return observation{}, fmt.Errorf("reading Tenant %s in %s: %w", w.key, w.c.describe(), err)
	}
	if got := conditionOrDefault(t.Spec.TenantCondition); got != w.want {
		return observation{}, fmt.Errorf("the Tenant %s in %s changed to %s meanwhile (a liqo_tenant resource or another tool "+
			"manages it?): set its condition in one place", w.key, w.c.describe(), got)
	}
	slices := &authv1beta1.ResourceSliceList{}
	if err := w.c.ctrl.List(ctx, slices, client.InNamespace(w.key.Namespace)); err != nil {
		return observation{}, fmt.Errorf("listing the ResourceSlices in %s of %s: %w", w.key.Namespace, w.c.describe(), err)
	}
	var pending, granted, denied []string
	for i := range slices.Items {
		s := &slices.Items[i]
		if s.Spec.ConsumerClusterID == nil || string(*s.Spec.ConsumerClusterID) != w.consumer || s.Labels[consts.ReplicationLabel] == "true" {
			continue // not a request of this consumer
		}
		decided, ok := sliceDecided(s, w.want)
		switch {
		case !decided:
			pending = append(pending, s.Name)
		case ok:
			granted = append(granted, fmt.Sprintf("%s (%s)", s.Name, offloadingResourceListString(s.Status.Resources)))
		default:
			denied = append(denied, fmt.Sprintf("%s (%s)", s.Name, resourceSliceDescribe(s)))
		}
	}
	seen := fmt.Sprintf("ResourceSlices of %s in %s: %s granted, %s denied", w.consumer, w.key.Namespace, listOrNone(granted), listOrNone(denied))
	if len(pending) > 0 {
		seen += fmt.Sprintf(", %s not decided yet for %s", listOrNone(pending), w.want)
	}
	done := len(pending) == 0
	if w.want == authv1beta1.TenantConditionDrained {
		names, err := w.offloadedPods(ctx)
		if err != nil {
			return observation{}, err
		}
		w.pods = len(names)
		seen += fmt.Sprintf("; offloaded pods of %s left on the cluster: %s", w.consumer, listOrNone(names))
		done = done && len(names) == 0
	}
	return observation{done: done, seen: seen}, nil
}

// offloadedPods names the consumer's offloaded pods left on the cluster: its ShadowPods, and the
// pods they made until those are gone too (a pod outlives its ShadowPod by its grace period).
func (w *tenantCordonWait) offloadedPods(ctx context.Context) ([]string, error) {
	selector := client.MatchingLabels{consts.OriginClusterIDLabel: w.consumer}
	shadows, pods := &offv1beta1.ShadowPodList{}, &corev1.PodList{}
	if err := w.c.ctrl.List(ctx, shadows, selector); err != nil {
		return nil, fmt.Errorf("listing the offloaded pods (ShadowPods) of %s in %s: %w; the Terraform user "+
			"needs `list` on shadowpods", w.consumer, w.c.describe(), err)
	}
	if err := w.c.ctrl.List(ctx, pods, selector); err != nil {
		return nil, fmt.Errorf("listing the offloaded pods of %s in %s: %w; the Terraform user needs `list` on pods",
			w.consumer, w.c.describe(), err)
	}
	seen := map[string]bool{}
	for _, sp := range shadows.Items {
		seen[sp.Namespace+"/"+sp.Name] = true
	}
	for _, p := range pods.Items {
		seen[p.Namespace+"/"+p.Name] = true
	}
	return slices.Collect(maps.Keys(seen)), nil
}

// hint says where to look when the wait times out.
func (w *tenantCordonWait) hint() string {
	if w.want == authv1beta1.TenantConditionDrained && w.pods > 0 {
		return fmt.Sprintf("the consumer %s withdraws its offloaded pods once its virtual nodes go: check its controller "+
			"manager, and the PodDisruptionBudgets that may hold its pods", w.consumer)
	}
	return fmt.Sprintf("the provider's controller manager decides the ResourceSlices: check that it runs in %s", w.c.describe())
}

// listOrNone renders names sorted, "none" when there are none.
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	sort.Strings(names)
	const most = 5
	if len(names) > most {
		return fmt.Sprintf("%d (%s, ...)", len(names), strings.Join(names[:most], ", "))
	}
	return fmt.Sprintf("%d (%s)", len(names), strings.Join(names, ", "))
}
