package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peerrbac"
)

// organizationPattern is what a consumer's group may look like: no colon, so never one of the
// system: groups Kubernetes reserves.
var organizationPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// consumerIdentityOrganizationValidators check an organization: never a system: group.
func consumerIdentityOrganizationValidators() []validator.String {
	// Kubernetes reserves the system: groups (system:masters is a cluster administrator).
	return []validator.String{stringvalidator.LengthAtLeast(1), stringvalidator.RegexMatches(organizationPattern,
		"must be a group name without a colon: the system: groups (system:masters, system:nodes, ...) carry cluster-wide rights")}
}

// consumerIdentityTypeName is the resource type name, for messages.
const consumerIdentityTypeName = "liqo_consumer_identity"

// consumerIdentityManagedLabel marks the RBAC objects and CSRs this resource manages.
const consumerIdentityManagedLabel = consts.LiqoManagedByLabel

// consumerIdentityResource issues, in the provider cluster, a client certificate for a consumer
// cluster through the CSR API and binds it to least privileges in the consumer's tenant namespace.
type consumerIdentityResource struct {
	clusterResource
}

type consumerIdentityModel struct {
	ID                   types.String   `tfsdk:"id"`
	Cluster              types.String   `tfsdk:"cluster"`
	Namespace            types.String   `tfsdk:"namespace"`
	Name                 types.String   `tfsdk:"name"`
	ConsumerClusterID    types.String   `tfsdk:"consumer_cluster_id"`
	Organization         types.String   `tfsdk:"organization"`
	RoleName             types.String   `tfsdk:"role_name"`
	APIServerURL         types.String   `tfsdk:"api_server_url"`
	ValidityHours        types.Int64    `tfsdk:"validity_hours"`
	RenewBefore          types.String   `tfsdk:"renew_before"`
	UserName             types.String   `tfsdk:"user_name"`
	CSRName              types.String   `tfsdk:"csr_name"`
	Certificate          types.String   `tfsdk:"certificate"`
	CertificateExpiresAt types.String   `tfsdk:"certificate_expires_at"`
	ReadyForRenewal      types.Bool     `tfsdk:"ready_for_renewal"`
	Kubeconfig           types.String   `tfsdk:"kubeconfig"`
	Timeouts             timeouts.Value `tfsdk:"timeouts"`
}

func newConsumerIdentityResource() resource.Resource { return &consumerIdentityResource{} }

// Metadata names the resource liqo_consumer_identity.
func (r *consumerIdentityResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_consumer_identity"
}

// IdentitySchema describes the resource identity: cluster, namespace and name of the RoleBinding.
func (r *consumerIdentityResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = namedObjectIdentity.schema()
}

// Schema describes liqo_consumer_identity.
func (r *consumerIdentityResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/name", timeouts.Opts{Create: true, Delete: true},
		"Provider side of a peering: issues the credentials of a consumer cluster's control plane. "+
			"At apply, the provider generates an ECDSA P-256 private key in its own process (it is never in the plan), "+
			"creates a CertificateSigningRequest for the signer `kubernetes.io/kube-apiserver-client` with common name "+
			"the consumer cluster ID and organization `organization`, approves it, waits for the certificate, and binds "+
			"the user in the tenant namespace with a RoleBinding: to a least-privilege Role this resource manages "+
			"(create/read/update/delete of `resourceslices`, `namespacemaps` and `renews` and their `/status`, nothing else) or to "+
			"the ClusterRole `role_name`. It exports a `kubeconfig` for the consumer, to pass to `liqo_identity` "+
			"(`kubeconfig_wo = liqo_consumer_identity.x.kubeconfig`).\n\n"+
			"**State:** `kubeconfig` holds the private key. It is Sensitive (hidden in plan output) but Terraform "+
			"stores it in the state: protect the state (encrypted remote backend, restricted access). Write-only "+
			"attributes cannot be used for values the provider computes.\n\n"+
			"**Renewal:** when the certificate expires within `renew_before`, the plan replaces the resource "+
			"(a new key and certificate); apply it before expiry, e.g. on a schedule. Signers cap the validity "+
			"(kube-controller-manager's `--cluster-signing-duration`, and never beyond their CA): when "+
			"`renew_before` is at least half the certificate's lifetime, it is renewed in the last third of its lifetime "+
			"instead, so that it is not re-issued at every plan. To renew at once, outside a plan, invoke the action "+
			"`liqo_consumer_identity_renew`: the next plan updates this resource in place with the renewed credentials.\n\n"+
			"**Permissions of the Terraform user** in the provider cluster: `create`, `get`, `delete` on "+
			"`certificatesigningrequests` (certificates.k8s.io), `update` on `certificatesigningrequests/approval`, "+
			"`approve` on `signers` with resourceName `kubernetes.io/kube-apiserver-client`; `create`, `get`, "+
			"`update`, `delete` on `roles` and `rolebindings` in the tenant namespace, plus the permissions granted "+
			"(or `bind` on the ClusterRole `role_name`). The cluster's kube-controller-manager must sign for that "+
			"signer (`--cluster-signing-cert-file`/`--cluster-signing-key-file`); managed clusters whose API servers "+
			"do not honour client certificates (e.g. EKS) are not supported, and there is no fallback.\n\n"+
			"Destroying it deletes the RoleBinding, the Role and the CSR: the certificate no longer grants anything. "+
			"Import (`[cluster/]namespace/name`) adopts the RBAC objects; since a private key cannot be imported, "+
			"the next apply issues a new certificate.",
		map[string]schema.Attribute{
			"namespace": namespaceAttribute("Tenant namespace of the consumer in the provider cluster, where the credentials " +
				"work. Changing it re-issues them."),
			"name": derivedDefaultString("Name of the Role and RoleBinding, and prefix of the CSR's name; default: "+
				"`liqo-consumer-<consumer_cluster_id>`. Changing it re-issues the credentials.", dnsLabelValidators()...),
			"consumer_cluster_id": clusterIDAttribute("Cluster ID of the consumer: the certificate's common name, hence the " +
				"user name. Changing it re-issues the credentials."),
			"organization": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString("liqo.io"),
				MarkdownDescription: "Organization of the certificate (the user's group); default `liqo.io`. Never a `system:` group such as `system:masters`. Changing it re-issues the credentials.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          consumerIdentityOrganizationValidators(),
			},
			"role_name": optionalString("A ClusterRole to bind instead of the Role this resource manages (e.g. Liqo's "+
				"`liqo-remote-controlplane`); unset (default): a least-privilege Role named `name`. Updated in place.",
				stringvalidator.LengthBetween(1, 253)),
			"api_server_url": optionalString("API server URL written in the kubeconfig, for consumers that reach the "+
				"provider through another address; default: the URL the provider connection uses. Updated in place.",
				stringvalidator.RegexMatches(authHTTPSURLPattern, "must be an https:// URL")),
			"validity_hours": schema.Int64Attribute{
				Optional: true, Computed: true,
				Default: int64default.StaticInt64(8760),
				MarkdownDescription: "Requested validity of the certificate, in hours (the CSR's `expirationSeconds`); " +
					"default 8760 (a year). The signer may cap it (kube-controller-manager's `--cluster-signing-duration`). " +
					"Changing it re-issues the credentials.",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplace()},
				Validators:    []validator.Int64{int64validator.Between(1, consumerIdentityMaxValidityHours)},
			},
			"renew_before": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString("720h"),
				MarkdownDescription: "When the certificate expires within this duration (e.g. `720h`, the default: 30 days), " +
					"the plan re-issues the credentials (replacement). When it is at least half the certificate's lifetime " +
					"(e.g. a signer capped the validity), a third of the lifetime is used instead. Updated in place.",
				Validators: []validator.String{authDurationValidator()},
			},
			"user_name": stableComputedString("The Kubernetes user the certificate authenticates as (its common name)."),
			"csr_name": stableComputedString("Name of the CertificateSigningRequest (the controller manager's cleaner may " +
				"delete it about an hour after signing)."),
			"certificate":            stableComputedString("The PEM client certificate (public)."),
			"certificate_expires_at": stableComputedString("When the certificate expires (RFC 3339)."),
			"ready_for_renewal": schema.BoolAttribute{
				Computed:            true,
				MarkdownDescription: "Whether the certificate expires within `renew_before`: when true, the plan re-issues the credentials.",
			},
			"kubeconfig": schema.StringAttribute{
				Computed: true, Sensitive: true,
				MarkdownDescription: "Kubeconfig of the consumer: server, CA of the provider's API server, client " +
					"certificate and private key. Sensitive, and stored in the state (see above).",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		})
}

// ModifyPlan shows the default name and the user in the plan, marks the kubeconfig as changing
// when the API server URL does, plans a re-issue when the certificate expires within
// renew_before, and otherwise takes into the plan the credentials of a renewal made out of band
// by liqo_consumer_identity_renew (planRenewal).
func (r *consumerIdentityResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	plan, ok := plannedModel[consumerIdentityModel](ctx, &r.clusterResource, req, resp)
	if !ok {
		return
	}
	planDerivedDefault(ctx, resp, "name", plan.Name, plan.ConsumerClusterID, func(id string) string { return "liqo-consumer-" + id })
	planDerivedDefault(ctx, resp, "user_name", plan.UserName, plan.ConsumerClusterID, sameValue)
	state, ok := priorModel[consumerIdentityModel](ctx, req, resp)
	if !ok {
		return
	}
	if !plan.APIServerURL.Equal(state.APIServerURL) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("kubeconfig"), types.StringUnknown())...)
	}
	renew := state.Certificate.IsNull() || state.Kubeconfig.IsNull() // imported, or left by a failed create
	if !renew && !plan.RenewBefore.IsUnknown() {
		var err error
		renew, err = consumerIdentityDue(state.Certificate.ValueString(), plan.RenewBefore.ValueString())
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("certificate"), "Checking the certificate's expiry", err.Error())
			return
		}
	}
	if !renew {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("ready_for_renewal"), false)...)
		r.planRenewal(ctx, &plan, &state, resp)
		return
	}
	// Terraform replaces only for a path whose value changes: flip the flag.
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("ready_for_renewal"), !state.ReadyForRenewal.ValueBool())...)
	resp.RequiresReplace = append(resp.RequiresReplace, path.Root("ready_for_renewal"))
}

// consumerIdentityMaxValidityHours keeps the CSR's expirationSeconds (an int32) in range.
const consumerIdentityMaxValidityHours = 87600

// consumerIdentityClockOffset moves the clock of the renewal decision (tests move it forward;
// zero otherwise).
var consumerIdentityClockOffset atomic.Int64

func (m *consumerIdentityModel) labels() map[string]string {
	return map[string]string{
		consts.RemoteClusterIDLabel:  m.ConsumerClusterID.ValueString(),
		consumerIdentityManagedLabel: "terraform-provider-liqo",
	}
}

// ensureRBAC creates or updates the managed Role (unless role_name is set) and the RoleBinding,
// re-creating the binding when its role changed (a RoleBinding's roleRef is immutable).
func (r *consumerIdentityResource) ensureRBAC(ctx context.Context, c *clusterClient, m *consumerIdentityModel) error {
	ns, name := m.Namespace.ValueString(), m.Name.ValueString()
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
	if !m.RoleName.IsNull() {
		roleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: m.RoleName.ValueString()}
	}
	if roleRef.Kind == "Role" {
		role := &rbacv1.Role{}
		err := c.ctrl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, role)
		switch {
		case apierrors.IsNotFound(err):
			role = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: m.labels()}, Rules: peerrbac.ControlPlaneRules()}
			if err := c.ctrl.Create(ctx, role); err != nil {
				return fmt.Errorf("creating Role %s/%s in %s: %w", ns, name, c.describe(), err)
			}
		case err != nil:
			return fmt.Errorf("reading Role %s/%s in %s: %w", ns, name, c.describe(), err)
		case role.Labels[consumerIdentityManagedLabel] == "":
			return fmt.Errorf("the Role %s/%s already exists in %s and is not managed by %s: delete it or set `name`", ns, name, c.describe(), consumerIdentityTypeName)
		default:
			role.Rules = peerrbac.ControlPlaneRules()
			if err := c.ctrl.Update(ctx, role); err != nil {
				return fmt.Errorf("updating Role %s/%s in %s: %w", ns, name, c.describe(), err)
			}
		}
	}
	rb := &rbacv1.RoleBinding{}
	err := c.ctrl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rb)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading RoleBinding %s/%s in %s: %w", ns, name, c.describe(), err)
	case rb.Labels[consumerIdentityManagedLabel] == "":
		return fmt.Errorf("the RoleBinding %s/%s already exists in %s and is not managed by %s: delete it or set `name`", ns, name, c.describe(), consumerIdentityTypeName)
	case rb.RoleRef != roleRef:
		if err := c.ctrl.Delete(ctx, rb); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting RoleBinding %s/%s in %s to change its role: %w", ns, name, c.describe(), err)
		}
	}
	want := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: m.labels()},
		RoleRef:    roleRef,
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: m.ConsumerClusterID.ValueString()}},
	}
	if err == nil && rb.RoleRef == roleRef {
		rb.Subjects = want.Subjects
		if err := c.ctrl.Update(ctx, rb); err != nil {
			return fmt.Errorf("updating RoleBinding %s/%s in %s: %w", ns, name, c.describe(), err)
		}
	} else if err := c.ctrl.Create(ctx, want); err != nil {
		return fmt.Errorf("creating RoleBinding %s/%s in %s: %w", ns, name, c.describe(), err)
	}
	if roleRef.Kind == "ClusterRole" {
		// A Role managed before role_name was set is no longer used.
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		cur := &rbacv1.Role{}
		if err := c.ctrl.Get(ctx, client.ObjectKeyFromObject(role), cur); err == nil && cur.Labels[consumerIdentityManagedLabel] != "" {
			if err := c.ctrl.Delete(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting the unused Role %s/%s in %s: %w", ns, name, c.describe(), err)
			}
		}
	}
	return nil
}

// Create issues the certificate and binds it.
func (r *consumerIdentityResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	const summary = "Creating consumer identity"
	defer namedObjectIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	plan, ok := modelOf[consumerIdentityModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, 2*time.Minute)
	resp.Diagnostics.Append(d...)
	c, err := r.client(ctx, plan.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if err := r.ensureRBAC(ctx, c, &plan); err != nil {
		resp.Diagnostics.AddError(summary, err.Error()+"; the Terraform user needs to manage roles and rolebindings in "+plan.Namespace.ValueString())
		// Some RBAC objects may exist: keep them in the state (tainted) so that they are cleaned up.
		r.savePartial(ctx, c, &plan, resp)
		return
	}
	saved := false
	err = consumerIdentityIssue(ctx, c, &plan, timeout, "create", func() bool {
		// Save the state before waiting, so that a failure leaves nothing orphaned.
		r.savePartial(ctx, c, &plan, resp)
		saved = true
		return !resp.Diagnostics.HasError()
	})
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		if !saved {
			r.savePartial(ctx, c, &plan, resp)
		}
		return
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// savePartial saves the state of a create that has not finished: the computed values still
// unknown are null.
func (r *consumerIdentityResource) savePartial(ctx context.Context, c *clusterClient, plan *consumerIdentityModel, resp *resource.CreateResponse) {
	p := *plan
	p.ID = types.StringValue(objectID(c.name, p.Namespace.ValueString(), p.Name.ValueString()))
	for _, v := range []*types.String{&p.CSRName, &p.Certificate, &p.CertificateExpiresAt, &p.Kubeconfig} {
		if v.IsUnknown() {
			*v = types.StringNull()
		}
	}
	p.ReadyForRenewal = types.BoolValue(true)
	*plan = p
	resp.Diagnostics.Append(resp.State.Set(ctx, &p)...)
}

// Read checks that the RoleBinding (and the managed Role) still exist, and whether the
// certificate is due for renewal. The CSR is not checked: the controller manager deletes signed
// CSRs after an hour.
func (r *consumerIdentityResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	namedObjectIdentity.record(ctx, &req.State, resp.Identity, &resp.Diagnostics) // Read keeps what names the RoleBinding
	state, ok := modelOf[consumerIdentityModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	c, err := r.client(ctx, state.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError("Reading consumer identity", err.Error())
		return
	}
	key := client.ObjectKey{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}
	rb := &rbacv1.RoleBinding{}
	found, err := readObject(ctx, c, "RoleBinding", key, rb)
	if err != nil {
		resp.Diagnostics.AddError("Reading consumer identity", err.Error())
		return
	}
	if !found {
		resp.State.RemoveResource(ctx)
		return
	}
	state.RoleName = types.StringNull()
	if rb.RoleRef.Kind == "ClusterRole" {
		state.RoleName = types.StringValue(rb.RoleRef.Name)
	} else {
		role := &rbacv1.Role{}
		err := c.ctrl.Get(ctx, key, role)
		if apierrors.IsNotFound(err) {
			resp.State.RemoveResource(ctx)
			return
		}
		if err != nil {
			resp.Diagnostics.AddError("Reading consumer identity", fmt.Sprintf("reading Role %s in %s: %v", key, c.describe(), err))
			return
		}
	}
	for _, s := range rb.Subjects {
		if s.Kind == rbacv1.UserKind {
			state.ConsumerClusterID = types.StringValue(s.Name)
			state.UserName = types.StringValue(s.Name)
		}
	}
	// After an import, the defaults (the next apply re-issues the credentials anyway).
	if state.RenewBefore.IsNull() {
		state.RenewBefore = types.StringValue("720h")
	}
	if state.Organization.IsNull() {
		state.Organization = types.StringValue("liqo.io")
	}
	if state.ValidityHours.IsNull() {
		state.ValidityHours = types.Int64Value(8760)
	}
	due := true
	if !state.Certificate.IsNull() && !state.Kubeconfig.IsNull() {
		if due, err = consumerIdentityDue(state.Certificate.ValueString(), state.RenewBefore.ValueString()); err != nil {
			resp.Diagnostics.AddError("Reading consumer identity", err.Error())
			return
		}
	}
	state.ReadyForRenewal = types.BoolValue(due)
	state.ID = types.StringValue(objectID(c.name, key.Namespace, key.Name))
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update changes the bound role and the kubeconfig's server in place.
func (r *consumerIdentityResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	const summary = "Updating consumer identity"
	defer namedObjectIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	var plan, state consumerIdentityModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := r.client(ctx, plan.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if err := r.ensureRBAC(ctx, c, &plan); err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if plan.Kubeconfig.IsUnknown() {
		kubeconfig, err := consumerIdentityWithServer(state.Kubeconfig.ValueString(), plan.server(c))
		if err != nil {
			resp.Diagnostics.AddError(summary, fmt.Sprintf("the kubeconfig in the state: %v", err))
			return
		}
		plan.Kubeconfig = types.StringValue(kubeconfig)
	}
	if !plan.Certificate.Equal(state.Certificate) {
		// The plan took the credentials of a renewal (liqo_consumer_identity_renew): they are
		// in the state now, so their Secret goes.
		if err := deleteConsumerIdentityRenewal(ctx, c, &plan); err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
			return
		}
	}
	if plan.ReadyForRenewal.IsUnknown() {
		due, err := consumerIdentityDue(plan.Certificate.ValueString(), plan.RenewBefore.ValueString())
		if err != nil {
			resp.Diagnostics.AddError(summary, err.Error())
			return
		}
		plan.ReadyForRenewal = types.BoolValue(due)
	}
	plan.ID = types.StringValue(objectID(c.name, plan.Namespace.ValueString(), plan.Name.ValueString()))
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Delete removes the RoleBinding, the managed Role and the CSR, so the certificate grants
// nothing any more.
func (r *consumerIdentityResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, ok := modelOf[consumerIdentityModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, 2*time.Minute)
	resp.Diagnostics.Append(d...)
	c, err := r.client(ctx, state.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError("Deleting consumer identity", err.Error())
		return
	}
	meta := metav1.ObjectMeta{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}
	var errs []error
	errs = append(errs, deleteAndWait(ctx, c, &rbacv1.RoleBinding{ObjectMeta: meta}, timeout))
	role := &rbacv1.Role{}
	if err := c.ctrl.Get(ctx, client.ObjectKey{Namespace: meta.Namespace, Name: meta.Name}, role); err == nil && role.Labels[consumerIdentityManagedLabel] != "" {
		errs = append(errs, deleteAndWait(ctx, c, &rbacv1.Role{ObjectMeta: meta}, timeout))
	}
	if name := state.CSRName.ValueString(); name != "" {
		errs = append(errs, deleteAndWait(ctx, c, &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}}, timeout))
	}
	if err := errors.Join(errs...); err != nil {
		resp.Diagnostics.AddError("Deleting consumer identity", err.Error())
	}
}

// ImportState takes `[cluster/]namespace/name` of the RoleBinding, or the identity. The private
// key cannot be imported, so the next apply issues new credentials.
func (r *consumerIdentityResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	namedObjectIdentity.importState(ctx, req, resp, "Importing consumer identity", objectIDParts(true))
}
