package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

// resourceSliceTypeName is the resource's type name, for messages.
const resourceSliceTypeName = "liqo_resource_slice"

// resourceSliceDefaultTimeout bounds the create and update waits unless timeouts says otherwise.
const resourceSliceDefaultTimeout = 5 * time.Minute

// resourceSliceResourceNamePattern is a resource name: an optional DNS prefix and a name.
var resourceSliceResourceNamePattern = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// resourceSliceResource manages the consumer side of a resource negotiation: a ResourceSlice in
// the consumer's tenant namespace for the provider cluster.
type resourceSliceResource struct {
	objectResource[resourceSliceModel, *resourceSliceModel, *authv1beta1.ResourceSlice]
}

type resourceSliceModel struct {
	namespacedObject
	quantitiesModel
	ProviderClusterID       types.String `tfsdk:"provider_cluster_id"`
	ConsumerClusterID       types.String `tfsdk:"consumer_cluster_id"`
	Class                   types.String `tfsdk:"class"`
	CreateVirtualNode       types.Bool   `tfsdk:"create_virtual_node"`
	WaitForAcceptance       types.Bool   `tfsdk:"wait_for_acceptance"`
	AuthenticationCondition types.String `tfsdk:"authentication_condition"`
	ResourcesCondition      types.String `tfsdk:"resources_condition"`
	Granted                 types.Map    `tfsdk:"granted"`
	Offer                   types.Object `tfsdk:"offer"`
}

func newResourceSliceResource() resource.Resource {
	r := &resourceSliceResource{}
	r.objectKind = objectKind[resourceSliceModel, *authv1beta1.ResourceSlice]{
		typeName: "_resource_slice",
		kind:     "ResourceSlice", noun: "resource slice", needLiqo: true, namespaced: true, timeout: resourceSliceDefaultTimeout,
		build:       resourceSliceBuild,
		read:        resourceSliceRefresh,
		written:     resourceSliceRefresh,
		waits:       func(plan *resourceSliceModel) bool { return plan.WaitForAcceptance.ValueBool() },
		wait:        resourceSliceWaitAccepted,
		createError: resourceSliceCreateError,
		deleted:     resourceSliceRelease,
	}
	return r
}

// resourceSliceQuantityAttribute is the requested quantity of a standard resource.
func resourceSliceQuantityAttribute(what string) schema.StringAttribute {
	return quantityAttribute(false, "Quantity of "+what+" requested (a Kubernetes quantity). "+
		"Changing it re-negotiates the slice in place.")
}

// Schema describes liqo_resource_slice.
func (r *resourceSliceResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/name", timeouts.Opts{Create: true, Update: true, Delete: true},
		"A request of the consumer cluster for resources of a provider cluster: a `ResourceSlice` "+
			"(`authentication.liqo.io/v1beta1`) in the consumer's tenant namespace for the provider, labelled "+
			"`liqo.io/remote-cluster-id=<provider_cluster_id>` and `liqo.io/replication=true` so that it is replicated "+
			"to the provider, which accepts or denies it. Changing the requested quantities re-negotiates the slice "+
			"in place. With `wait_for_acceptance`, create and update wait until the provider has accepted the "+
			"slice (both conditions `Accepted` and the requested quantities granted); the state is saved before "+
			"waiting, so a timeout never orphans the object.",
		map[string]schema.Attribute{
			"name": requiredReplaceString("Name of the ResourceSlice. Changing it replaces the slice.",
				dnsSubdomain("must be a DNS subdomain: lower-case letters, digits, '-' and '.'")...),
			"namespace": derivedDefaultString("Tenant namespace of the peering with the provider (see `liqo_tenant_namespace`); "+
				"default: `liqo-tenant-<provider_cluster_id>`. Changing it replaces the slice.", dnsLabelValidators()...),
			"provider_cluster_id": clusterIDAttribute("Cluster ID of the provider cluster asked for resources " +
				"(`spec.providerClusterID`, also the `liqo.io/remote-cluster-id` label). The API forbids changing it: " +
				"changing it replaces the slice."),
			"consumer_cluster_id": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Cluster ID of this (consumer) cluster (`spec.consumerClusterID`). The API forbids " +
					"changing it: changing it replaces the slice.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{clusterIDValidator()},
			},
			"class": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString(string(authv1beta1.ResourceSliceClassDefault)),
				MarkdownDescription: "Class of the slice, which selects how the provider serves it; default `default`. In place.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 63)},
			},
			"cpu":    resourceSliceQuantityAttribute("CPU (e.g. `4` or `500m`)"),
			"memory": resourceSliceQuantityAttribute("memory (e.g. `8Gi`)"),
			"pods": withValidators(resourceSliceQuantityAttribute("pods (e.g. `110`, at least 1; not set: the provider's default)"),
				podsValidator("Ask for at least 1, e.g. pods = \"110\", or leave pods out for the provider's default.")),
			"ephemeral_storage": resourceSliceQuantityAttribute("ephemeral storage (`ephemeral-storage`, e.g. `20Gi`)"),
			"resources": quantitiesResourcesAttribute("Other resources requested, by resource name (e.g. `nvidia.com/gpu = \"2\"`), as " +
				"quantities. `cpu`, `memory`, `pods` and `ephemeral-storage` have their own attributes. In place."),
			"create_virtual_node": flagAttribute(true, "Whether the consumer makes a virtual node for the slice once "+
				"accepted (annotation `liqo.io/create-virtual-node`); default `true`. In place."),
			"wait_for_acceptance": flagAttribute(false, "Wait, on create and on update, until the provider has accepted "+
				"the slice: the `Authentication` and `Resources` conditions are `Accepted` and `status.resources` grants "+
				"each requested quantity. A `Denied` condition fails at once. Default `false` (the provider's controllers "+
				"answer asynchronously). Bounded by `timeouts.create` / `timeouts.update` (default 5m)."),
			"authentication_condition": computedString("Status of the `Authentication` condition reported by the provider: " +
				"`Accepted`, `Denied`, or null while unanswered."),
			"resources_condition": computedString("Status of the `Resources` condition reported by the provider: `Accepted`, " +
				"`Denied`, or null while unanswered."),
			"granted": computedStringMap("Resources granted by the provider (`status.resources`), by resource name; null " +
				"while unanswered."),
			"offer": offerAcceptAttribute("the quantities asked"),
		})
}

// ModifyPlan shows the default namespace in the plan.
func (r *resourceSliceResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if plan, ok := plannedModel[resourceSliceModel](ctx, &r.clusterResource, req, resp); ok {
		planDerivedDefault(ctx, resp, "namespace", plan.Namespace, plan.ProviderClusterID, consts.TenantNamespace)
	}
}

// fill writes the desired spec, labels and annotation into the object.
func (m *resourceSliceModel) fill(ctx context.Context, rs *authv1beta1.ResourceSlice) error {
	res, err := m.requested(ctx)
	if err != nil {
		return err
	}
	o := forge.ResourceSliceOptions{
		ConsumerID: m.ConsumerClusterID.ValueString(), Class: authv1beta1.ResourceSliceClass(m.Class.ValueString()),
		Resources: res, CreateVirtualNode: m.CreateVirtualNode.ValueBool(),
	}
	if !m.Offer.IsNull() {
		o.Contract = rs.Name
	}
	forge.MutateResourceSlice(rs, m.ProviderClusterID.ValueString(), o)
	return nil
}

// resourceSliceBuild writes the slice from the plan; with an offer, it first has the contract
// signed (peering.EnsureContract, within the create or update timeout), and without one it
// removes the contract an earlier offer made.
func resourceSliceBuild(ctx context.Context, w objectWrite[resourceSliceModel], rs *authv1beta1.ResourceSlice) error {
	accept, err := offerAccept(ctx, w.plan.Offer)
	if err != nil {
		return err
	}
	consumer := w.cluster.peeringCluster(w.cluster.describe())
	switch {
	case accept != nil:
		if err := resourceSliceContract(ctx, w, consumer, rs, accept); err != nil {
			return err
		}
	case w.state != nil && !w.state.Offer.IsNull():
		if err := peering.RemoveContract(ctx, consumer, rs.Namespace, rs.Name, 200*time.Millisecond); err != nil {
			return fmt.Errorf("removing the contract of the offer removed: %w", err)
		}
	}
	return w.plan.fill(ctx, rs)
}

// resourceSliceContract has the slice's contract on accept signed, within the create (or
// update) timeout.
func resourceSliceContract(ctx context.Context, w objectWrite[resourceSliceModel], consumer peering.Cluster,
	rs *authv1beta1.ResourceSlice, accept *peering.Accept) error {
	timeout, d := w.plan.Timeouts.Create(ctx, resourceSliceDefaultTimeout)
	if w.state != nil {
		timeout, d = w.plan.Timeouts.Update(ctx, resourceSliceDefaultTimeout)
	}
	if d.HasError() {
		return diagsError(d)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := w.plan.requested(ctx)
	if err != nil {
		return err
	}
	consumerID := corev1beta1.ClusterID(w.plan.ConsumerClusterID.ValueString())
	if consumerID == "" {
		if consumerID, err = peering.ClusterID(ctx, consumer); err != nil {
			return err
		}
	}
	_, err = peering.EnsureContract(ctx, peering.ContractRequest{Consumer: consumer, ConsumerID: consumerID,
		ProviderID: corev1beta1.ClusterID(w.plan.ProviderClusterID.ValueString()), Namespace: rs.Namespace, Name: rs.Name,
		Resources: res, Accept: *accept, PollInterval: 200 * time.Millisecond})
	return err // EnsureContract's errors name the contract, the offer and the fix
}

// refresh sets the model from the object, keeping the configured spelling of equal quantities.
func (m *resourceSliceModel) refresh(ctx context.Context, clusterName string, rs *authv1beta1.ResourceSlice) error {
	m.ID = types.StringValue(objectID(clusterName, rs.Namespace, rs.Name))
	m.Name = types.StringValue(rs.Name)
	m.Namespace = types.StringValue(rs.Namespace)
	m.ProviderClusterID = types.StringNull()
	if rs.Spec.ProviderClusterID != nil {
		m.ProviderClusterID = types.StringValue(string(*rs.Spec.ProviderClusterID))
	}
	m.ConsumerClusterID = types.StringNull()
	if rs.Spec.ConsumerClusterID != nil {
		m.ConsumerClusterID = types.StringValue(string(*rs.Spec.ConsumerClusterID))
	}
	m.Class = stringOrNull(string(rs.Spec.Class))
	if err := m.set(ctx, rs.Spec.Resources, func(corev1.ResourceName) bool { return true }); err != nil {
		return err
	}
	m.CreateVirtualNode = types.BoolNull()
	if b, err := strconv.ParseBool(rs.Annotations[consts.CreateVirtualNodeAnnotation]); err == nil {
		m.CreateVirtualNode = types.BoolValue(b)
	}
	if m.WaitForAcceptance.IsNull() || m.WaitForAcceptance.IsUnknown() {
		m.WaitForAcceptance = types.BoolValue(false)
	}
	m.AuthenticationCondition = types.StringNull()
	m.ResourcesCondition = types.StringNull()
	for _, c := range rs.Status.Conditions {
		switch c.Type {
		case authv1beta1.ResourceSliceConditionTypeAuthentication:
			m.AuthenticationCondition = stringOrNull(string(c.Status))
		case authv1beta1.ResourceSliceConditionTypeResources:
			m.ResourcesCondition = stringOrNull(string(c.Status))
		}
	}
	granted, err := resourceListValue(ctx, rs.Status.Resources)
	if err != nil {
		return fmt.Errorf("building granted: %w", err)
	}
	m.Granted = granted
	return nil
}

// resourceSliceDescribe renders the state of a slice's negotiation for messages.
func resourceSliceDescribe(rs *authv1beta1.ResourceSlice) string {
	cond := func(t authv1beta1.ResourceSliceConditionType) string {
		for _, c := range rs.Status.Conditions {
			if c.Type == t {
				s := string(t) + "=" + string(c.Status)
				if c.Reason != "" || c.Message != "" {
					s += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
				}
				return s
			}
		}
		return string(t) + " not reported"
	}
	return fmt.Sprintf("%s, %s, granted %s", cond(authv1beta1.ResourceSliceConditionTypeAuthentication),
		cond(authv1beta1.ResourceSliceConditionTypeResources), offloadingResourceListString(rs.Status.Resources))
}

// resourceSliceAnswer tells whether the provider accepted the slice (both conditions Accepted
// and each requested quantity granted), and returns an error when it denied it.
func resourceSliceAnswer(rs *authv1beta1.ResourceSlice, want corev1.ResourceList) (bool, error) {
	accepted := 0
	for _, c := range rs.Status.Conditions {
		switch c.Status {
		case authv1beta1.ResourceSliceConditionDenied:
			return false, fmt.Errorf("the provider denied it: %s", resourceSliceDescribe(rs))
		case authv1beta1.ResourceSliceConditionAccepted:
			if c.Type == authv1beta1.ResourceSliceConditionTypeResources && c.Reason == consts.ResourceSliceGrantKept {
				// What is asked now is refused; the grant in force stays (the virtual node keeps it).
				return false, fmt.Errorf("the provider denied the new request and keeps the grant in force: %s", resourceSliceDescribe(rs))
			}
			if c.Type == authv1beta1.ResourceSliceConditionTypeAuthentication || c.Type == authv1beta1.ResourceSliceConditionTypeResources {
				accepted++
			}
		}
	}
	if accepted < 2 {
		return false, nil
	}
	for name, q := range want {
		g, ok := rs.Status.Resources[name]
		if !ok || g.Cmp(q) != 0 {
			return false, nil
		}
	}
	return true, nil
}

// resourceSliceWait polls the slice until the provider accepted it. It returns the last object
// seen; the error names the object, the cluster, the module and the last conditions seen.
func resourceSliceWait(ctx context.Context, c *clusterClient, key client.ObjectKey, want corev1.ResourceList,
	timeout time.Duration, timeoutName string) (*authv1beta1.ResourceSlice, error) {
	ref := objectID("", key.Namespace, key.Name)
	var last *authv1beta1.ResourceSlice
	var denied error
	lastSeen := "nothing yet"
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		cur := &authv1beta1.ResourceSlice{}
		if err := c.ctrl.Get(ctx, key, cur); err != nil {
			if apierrors.IsNotFound(err) {
				return false, fmt.Errorf("ResourceSlice %s in %s (%s) was deleted while waiting for its acceptance", ref, c.describe(), resourceSliceTypeName)
			}
			if ctx.Err() == nil && last == nil {
				lastSeen = err.Error()
			}
			return false, nil
		}
		last = cur
		lastSeen = resourceSliceDescribe(cur)
		ok, err := resourceSliceAnswer(cur, want)
		if err != nil {
			denied = err
			return false, err
		}
		return ok, nil
	})
	switch {
	case denied != nil:
		return last, fmt.Errorf("ResourceSlice %s in %s (%s, requesting %s): %w; check the provider's Tenant for this consumer "+
			"(it must be Active) and its available resources", ref, c.describe(), resourceSliceTypeName, offloadingResourceListString(want), denied)
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || wait.Interrupted(err)):
		return last, fmt.Errorf("ResourceSlice %s in %s (%s) was not accepted by the provider within %s (requesting %s); last seen: %s. "+
			"Check that the provider's liqo controllers run and that the authentication with it is set up, or raise timeouts.%s",
			ref, c.describe(), resourceSliceTypeName, timeout, offloadingResourceListString(want), lastSeen, timeoutName)
	case err != nil:
		return last, fmt.Errorf("waiting for ResourceSlice %s in %s (%s) to be accepted (last seen: %s): %w",
			ref, c.describe(), resourceSliceTypeName, lastSeen, err)
	}
	return last, nil
}

// resourceSliceRefresh sets the model from the slice.
func resourceSliceRefresh(ctx context.Context, c *clusterClient, m *resourceSliceModel, rs *authv1beta1.ResourceSlice) error {
	return m.refresh(ctx, c.name, rs)
}

// resourceSliceWaitAccepted waits until the provider accepted the slice; it returns what it
// last saw, also when the wait fails.
func resourceSliceWaitAccepted(ctx context.Context, c *clusterClient, _ *resourceSliceModel, rs *authv1beta1.ResourceSlice,
	timeout time.Duration, op string,
) (*authv1beta1.ResourceSlice, error) {
	return resourceSliceWait(ctx, c, client.ObjectKeyFromObject(rs), rs.Spec.Resources, timeout, op)
}

// resourceSliceCreateError explains a failed create.
func resourceSliceCreateError(c *clusterClient, rs *authv1beta1.ResourceSlice, err error) string {
	ref := objectID("", rs.Namespace, rs.Name)
	switch {
	case apierrors.IsAlreadyExists(err):
		return fmt.Sprintf("ResourceSlice %s already exists in %s: import it with `terraform import <address> %s`",
			ref, c.describe(), objectID(c.name, rs.Namespace, rs.Name))
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("creating ResourceSlice %s in %s: namespace %s does not exist: create the tenant namespace first "+
			"(liqo_tenant_namespace) or set `namespace`: %v", ref, c.describe(), rs.Namespace, err)
	}
	return fmt.Sprintf("creating ResourceSlice %s in %s: %v", ref, c.describe(), err)
}

// resourceSliceRelease removes, once the slice is gone, what it brought: its virtual node and,
// with the provider's last slice, the offloaded namespaces' maps, while the identity that
// depends on this slice still works.
func resourceSliceRelease(ctx context.Context, c *clusterClient, state *resourceSliceModel, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	consumer := c.peeringCluster(c.describe())
	ns, name := state.Namespace.ValueString(), state.Name.ValueString()
	if err := peering.ReleaseSlice(ctx, consumer, ns, name, corev1beta1.ClusterID(state.ProviderClusterID.ValueString()),
		200*time.Millisecond); err != nil {
		return fmt.Errorf("ResourceSlice %s/%s deleted, but: %w; raise timeouts.delete or look at what holds it", ns, name, err)
	}
	if err := peering.RemoveContract(ctx, consumer, ns, name, 200*time.Millisecond); err != nil {
		return fmt.Errorf("ResourceSlice %s/%s deleted, but its contract: %w", ns, name, err)
	}
	return nil
}
