package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/action/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// consumerIdentityRenewDefaultTimeout bounds an invocation unless timeouts.invoke says otherwise,
// as timeouts.create does liqo_consumer_identity's create.
const consumerIdentityRenewDefaultTimeout = 2 * time.Minute

// The renewal Secret: the credentials liqo_consumer_identity_renew issued, kept in the tenant
// namespace next to the RoleBinding (and owned by it) until liqo_consumer_identity takes them
// into its state at the next apply, which deletes it.
const (
	// consumerIdentityRenewalSuffix follows the identity's name in the Secret's name.
	consumerIdentityRenewalSuffix = "-renewal"
	// Data keys of the renewal Secret.
	consumerIdentityRenewalKubeconfig  = "kubeconfig"
	consumerIdentityRenewalCertificate = "certificate"
	consumerIdentityRenewalCSR         = "csr-name"
)

// consumerIdentityRenewAction is liqo_consumer_identity_renew: it issues new credentials for a
// liqo_consumer_identity now, through the same steps as the resource's create.
type consumerIdentityRenewAction struct {
	clusterAction
}

type consumerIdentityRenewModel struct {
	Cluster       types.String   `tfsdk:"cluster"`
	Namespace     types.String   `tfsdk:"namespace"`
	Name          types.String   `tfsdk:"name"`
	Organization  types.String   `tfsdk:"organization"`
	ValidityHours types.Int64    `tfsdk:"validity_hours"`
	APIServerURL  types.String   `tfsdk:"api_server_url"`
	Timeouts      timeouts.Value `tfsdk:"timeouts"`
}

var _ action.ActionWithModifyPlan = (*consumerIdentityRenewAction)(nil)

func newConsumerIdentityRenewAction() action.Action {
	return &consumerIdentityRenewAction{clusterAction{clusterAttrs: []string{"cluster"}}}
}

// Metadata names the action liqo_consumer_identity_renew.
func (a *consumerIdentityRenewAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_consumer_identity_renew"
}

// Schema describes liqo_consumer_identity_renew.
func (a *consumerIdentityRenewAction) Schema(ctx context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = actionSchema(ctx, consumerIdentityRenewDefaultTimeout,
		"Renews now the certificate of a `liqo_consumer_identity`, without waiting for its `renew_before`: in the "+
			"provider cluster, it makes a new private key, has a new certificate signed for the same user through a "+
			"CertificateSigningRequest (as the resource's create does) and renders a new kubeconfig.\n\n"+
			"**Where the new kubeconfig goes.** An action cannot write Terraform state, and the new private key exists "+
			"nowhere else: the action keeps the kubeconfig in the Secret `<name>-renewal` next to the identity's "+
			"RoleBinding (in the tenant namespace, owned by the RoleBinding). Until the next apply, the state of "+
			"`liqo_consumer_identity` still holds the previous kubeconfig, which stays valid until its certificate "+
			"expires (Kubernetes cannot revoke a client certificate). The next plan shows `liqo_consumer_identity` "+
			"updated in place with the renewed `certificate`, `certificate_expires_at`, `csr_name` and `kubeconfig`; "+
			"that apply saves them in the state, deletes the Secret, and passes the kubeconfig on to what uses it "+
			"(e.g. `liqo_identity`, whose `kubeconfig_wo_version` follows `certificate_expires_at` in the examples). "+
			"A renewal whose certificate is not for the identity's user and `organization` is not taken (the plan "+
			"warns); a later invocation replaces a renewal not taken yet.\n\n"+
			"Set `organization`, `validity_hours` and `api_server_url` as on the resource (reference its attributes).\n\n"+
			"**Permissions of the Terraform user** in the provider cluster: those of `liqo_consumer_identity` "+
			"(CertificateSigningRequests, approval, the signer) plus `get` on `rolebindings` and `get`, `create`, "+
			"`update`, `delete` on `secrets` in the tenant namespace.",
		map[string]schema.Attribute{
			"cluster": actionClusterAttribute(false, "Key of the provider's `clusters` map naming the provider cluster, "+
				"where the identity was issued (the resource's `cluster`); default: the provider block's own connection."),
			"namespace": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Tenant namespace of the identity (the resource's `namespace`).",
				Validators:          namespaceNameValidators(),
			},
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of the identity's RoleBinding (the resource's `name`).",
				Validators:          dnsLabelValidators(),
			},
			"organization": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Organization of the new certificate, as the resource's `organization`; default " +
					"`liqo.io`. Never a `system:` group.",
				Validators: consumerIdentityOrganizationValidators(),
			},
			"validity_hours": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "Requested validity of the new certificate, in hours, as the resource's `validity_hours`; default 8760.",
				Validators:          []validator.Int64{int64validator.Between(1, consumerIdentityMaxValidityHours)},
			},
			"api_server_url": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "API server URL of the new kubeconfig, as the resource's `api_server_url`; default: " +
					"the URL the provider connection uses. The resource writes its own when it takes the renewal.",
				Validators: []validator.String{stringvalidator.RegexMatches(authHTTPSURLPattern, "must be an https:// URL")},
			},
		})
}

// Invoke issues the new credentials and keeps them in the renewal Secret.
func (a *consumerIdentityRenewAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	const summary = "Renewing the consumer identity"
	cfg, ok := modelOf[consumerIdentityRenewModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	ctx, cancel, timeout, ok := invocationContext(ctx, cfg.Timeouts, consumerIdentityRenewDefaultTimeout, resp)
	if !ok {
		return
	}
	defer cancel()
	c, err := a.client(ctx, cfg.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	rb, user, err := consumerIdentityBinding(ctx, c, cfg.Namespace.ValueString(), cfg.Name.ValueString())
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	m := consumerIdentityModel{
		Namespace: cfg.Namespace, Name: cfg.Name, ConsumerClusterID: types.StringValue(user),
		Organization: types.StringValue("liqo.io"), ValidityHours: types.Int64Value(8760), APIServerURL: cfg.APIServerURL,
	}
	if !cfg.Organization.IsNull() {
		m.Organization = cfg.Organization
	}
	if !cfg.ValidityHours.IsNull() {
		m.ValidityHours = cfg.ValidityHours
	}
	progress(resp, "issuing a certificate for user %s (organization %s) in %s", user, m.Organization.ValueString(), c.describe())
	err = consumerIdentityIssue(ctx, c, &m, timeout, "invoke", func() bool {
		progress(resp, "CertificateSigningRequest %s created: approving it and waiting for the signer", m.CSRName.ValueString())
		return true
	})
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	secret, replaced, err := writeConsumerIdentityRenewal(ctx, c, rb, &m)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error()+"; the new certificate is not used: invoke the action again once this is fixed")
		return
	}
	if replaced {
		progress(resp, "a renewal that no apply had taken yet was replaced")
	}
	progress(resp, "done: new certificate for %s, valid until %s (CertificateSigningRequest %s); its kubeconfig waits in Secret %s "+
		"in %s: the next plan updates liqo_consumer_identity %s in place with it, and that apply passes it on. The previous "+
		"certificate stays valid until it expires", user, m.CertificateExpiresAt.ValueString(), m.CSRName.ValueString(),
		secret, c.describe(), objectID(c.name, m.Namespace.ValueString(), m.Name.ValueString()))
}

// consumerIdentityBinding reads the RoleBinding of a liqo_consumer_identity and returns it with
// the user it binds (the consumer's cluster ID); the error names what to fix.
func consumerIdentityBinding(ctx context.Context, c *clusterClient, ns, name string) (*rbacv1.RoleBinding, string, error) {
	rb := &rbacv1.RoleBinding{}
	err := c.ctrl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rb)
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", fmt.Errorf("no RoleBinding %s/%s in %s: namespace and name must be those of an applied %s "+
			"(its `namespace` and `name` attributes)", ns, name, c.describe(), consumerIdentityTypeName)
	case err != nil:
		return nil, "", fmt.Errorf("reading RoleBinding %s/%s in %s: %w; the Terraform user needs `get` on rolebindings", ns, name, c.describe(), err)
	case rb.Labels[consumerIdentityManagedLabel] == "":
		return nil, "", fmt.Errorf("the RoleBinding %s/%s in %s was not made by %s (no label %s): the action renews only the "+
			"credentials that resource issued; a Tenant's identity is renewed by the provider's controllers", ns, name,
			c.describe(), consumerIdentityTypeName, consumerIdentityManagedLabel)
	}
	for _, s := range rb.Subjects {
		if s.Kind == rbacv1.UserKind && s.Name != "" {
			return rb, s.Name, nil
		}
	}
	return nil, "", fmt.Errorf("the RoleBinding %s/%s in %s binds no user: apply the %s again to repair it", ns, name, c.describe(),
		consumerIdentityTypeName)
}

// consumerIdentityRenewalKey is the renewal Secret of the identity m.
func consumerIdentityRenewalKey(m *consumerIdentityModel) client.ObjectKey {
	return client.ObjectKey{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString() + consumerIdentityRenewalSuffix}
}

// writeConsumerIdentityRenewal keeps m's new credentials in the renewal Secret, owned by the
// RoleBinding rb. replaced tells whether it held a renewal not taken yet.
func writeConsumerIdentityRenewal(ctx context.Context, c *clusterClient, rb *rbacv1.RoleBinding, m *consumerIdentityModel,
) (ref string, replaced bool, err error) {
	key := consumerIdentityRenewalKey(m)
	ref = objectID("", key.Namespace, key.Name)
	secret := &corev1.Secret{}
	err = c.ctrl.Get(ctx, key, secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Type: corev1.SecretTypeOpaque}
	case err != nil:
		return ref, false, fmt.Errorf("reading Secret %s in %s: %w; the Terraform user needs `get` on secrets", ref, c.describe(), err)
	case secret.Labels[consumerIdentityManagedLabel] == "":
		return ref, false, fmt.Errorf("the Secret %s in %s exists and was not made by liqo_consumer_identity_renew (no label %s): "+
			"rename or delete it", ref, c.describe(), consumerIdentityManagedLabel)
	default:
		replaced = true
	}
	secret.Labels = m.labels()
	secret.OwnerReferences = []metav1.OwnerReference{{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding",
		Name: rb.Name, UID: rb.UID, BlockOwnerDeletion: ptr.To(true)}}
	secret.Data = map[string][]byte{
		consumerIdentityRenewalKubeconfig:  []byte(m.Kubeconfig.ValueString()),
		consumerIdentityRenewalCertificate: []byte(m.Certificate.ValueString()),
		consumerIdentityRenewalCSR:         []byte(m.CSRName.ValueString()),
	}
	if replaced {
		err = c.ctrl.Update(ctx, secret)
	} else {
		err = c.ctrl.Create(ctx, secret)
	}
	if err != nil {
		return ref, false, fmt.Errorf("writing Secret %s in %s: %w; the Terraform user needs `create` and `update` on secrets",
			ref, c.describe(), err)
	}
	return ref, replaced, nil
}

// planRenewal takes into the plan the credentials that liqo_consumer_identity_renew left in the
// renewal Secret, when they are newer than the state's and for the identity's user and
// organization: the update that follows saves them in the state and deletes the Secret. A user
// who may not read Secrets cannot have left one: nothing is looked for then.
func (r *consumerIdentityResource) planRenewal(ctx context.Context, plan, state *consumerIdentityModel, resp *resource.ModifyPlanResponse) {
	const summary = "Looking for a renewal of the consumer identity"
	for _, v := range []types.String{plan.Cluster, plan.Namespace, plan.Name, plan.ConsumerClusterID, plan.Organization, plan.APIServerURL} {
		if v.IsUnknown() {
			return // looked for at the next plan
		}
	}
	c, err := r.client(ctx, plan.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddWarning(summary, err.Error())
		return
	}
	key := consumerIdentityRenewalKey(plan)
	secret := &corev1.Secret{}
	err = c.ctrl.Get(ctx, key, secret)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return
	case err != nil:
		resp.Diagnostics.AddWarning(summary, fmt.Sprintf("reading Secret %s in %s: %v", key, c.describe(), err))
		return
	case secret.Labels[consumerIdentityManagedLabel] == "":
		return
	}
	certPEM := secret.Data[consumerIdentityRenewalCertificate]
	renewed, err := consumerIdentityParseCertificate(certPEM)
	if err != nil {
		resp.Diagnostics.AddWarning(summary, fmt.Sprintf("Secret %s in %s: %v: it is not taken; delete it", key, c.describe(), err))
		return
	}
	current, err := consumerIdentityParseCertificate([]byte(state.Certificate.ValueString()))
	if err == nil && (current.Equal(renewed) || renewed.NotBefore.Before(current.NotBefore)) {
		return // the state has it, or a more recent one
	}
	if subj := renewed.Subject; subj.CommonName != plan.ConsumerClusterID.ValueString() || len(subj.Organization) != 1 ||
		subj.Organization[0] != plan.Organization.ValueString() {
		resp.Diagnostics.AddWarning(summary, fmt.Sprintf("Secret %s in %s holds a renewed certificate for user %q in %v, "+
			"not for this identity's user %q in organization %q: it is not taken. Invoke liqo_consumer_identity_renew "+
			"with the identity's organization, or delete the Secret", key, c.describe(), subj.CommonName, subj.Organization,
			plan.ConsumerClusterID.ValueString(), plan.Organization.ValueString()))
		return
	}
	kubeconfig, err := consumerIdentityWithServer(string(secret.Data[consumerIdentityRenewalKubeconfig]), plan.server(c))
	if err != nil {
		resp.Diagnostics.AddWarning(summary, fmt.Sprintf("Secret %s in %s: %v: it is not taken; delete it", key, c.describe(), err))
		return
	}
	renewal := *plan
	renewal.CSRName = types.StringValue(string(secret.Data[consumerIdentityRenewalCSR]))
	if err := renewal.setCredentials(c, certPEM, []byte(kubeconfig)); err != nil {
		resp.Diagnostics.AddWarning(summary, err.Error())
		return
	}
	for attr, v := range map[string]any{
		"csr_name": renewal.CSRName, "certificate": renewal.Certificate, "certificate_expires_at": renewal.CertificateExpiresAt,
		"kubeconfig": renewal.Kubeconfig, "ready_for_renewal": renewal.ReadyForRenewal,
	} {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(attr), v)...)
	}
}

// deleteConsumerIdentityRenewal deletes the renewal Secret of m once its credentials are in the
// state.
func deleteConsumerIdentityRenewal(ctx context.Context, c *clusterClient, m *consumerIdentityModel) error {
	key := consumerIdentityRenewalKey(m)
	err := c.ctrl.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the renewal Secret %s in %s, whose credentials are now in the state: %w; the Terraform user "+
			"needs `delete` on secrets", key, c.describe(), err)
	}
	return nil
}
