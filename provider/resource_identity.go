package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

var _ resource.ResourceWithConfigValidators = (*identityResource)(nil)

// identityKubeconfigHashKey is the private-state key of the SHA-256 of the kubeconfig written
// through the write-only attribute: Read compares it with the Secret to detect a changed content
// without ever storing the content.
const identityKubeconfigHashKey = "kubeconfig_sha256"

// identityResource manages, in the consumer cluster, the Identity that holds the credentials
// issued by a provider cluster and its kubeconfig Secret.
type identityResource struct {
	clusterResource
}

type identityModel struct {
	ID                    types.String   `tfsdk:"id"`
	Cluster               types.String   `tfsdk:"cluster"`
	Namespace             types.String   `tfsdk:"namespace"`
	Name                  types.String   `tfsdk:"name"`
	ProviderClusterID     types.String   `tfsdk:"provider_cluster_id"`
	Type                  types.String   `tfsdk:"type"`
	RemoteTenantNamespace types.String   `tfsdk:"remote_tenant_namespace"`
	SecretName            types.String   `tfsdk:"secret_name"`
	KubeconfigWO          types.String   `tfsdk:"kubeconfig_wo"`
	KubeconfigWOVersion   types.Int64    `tfsdk:"kubeconfig_wo_version"`
	Kubeconfig            types.String   `tfsdk:"kubeconfig"`
	APIServer             types.String   `tfsdk:"api_server"`
	Timeouts              timeouts.Value `tfsdk:"timeouts"`
}

func newIdentityResource() resource.Resource { return &identityResource{} }

// Metadata names the resource liqo_identity.
func (r *identityResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_identity"
}

// IdentitySchema describes the resource identity: cluster, namespace and name of the Identity.
func (r *identityResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = namedObjectIdentity.schema()
}

// Schema describes liqo_identity.
func (r *identityResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/name", timeouts.Opts{Delete: true},
		"Consumer side of a peering: the credentials a provider cluster issued to this cluster. "+
			"It manages the `Identity` (`authentication.liqo.io/v1beta1`) in the consumer's tenant namespace and its "+
			"kubeconfig Secret (data key `kubeconfig`, labels `liqo.io/identity-type` and `liqo.io/remote-cluster-id`, "+
			"annotation `liqo.io/remote-tenant-namespace`), which Liqo's replicator uses to reach the provider.\n\n"+
			"Give the kubeconfig through the write-only `kubeconfig_wo` (Terraform >= 1.11: it is never stored in the "+
			"plan or the state; bump `kubeconfig_wo_version` to write a new one), typically "+
			"`kubeconfig_wo = liqo_consumer_identity.x.kubeconfig`; or, with older Terraform, through the sensitive "+
			"`kubeconfig`, which Terraform stores in the state. Exactly one of the two must be set.",
		map[string]schema.Attribute{
			"namespace": namespaceAttribute("Tenant namespace of the provider in the consumer cluster " +
				"(e.g. `liqo_tenant_namespace.x.name`). Changing it replaces the Identity."),
			"name": derivedDefaultString("Name of the Identity; default: `<type in lower case>-<provider_cluster_id>`, e.g. "+
				"`controlplane-cl-provider`. Changing it replaces the Identity.", dnsLabelValidators()...),
			"provider_cluster_id": clusterIDAttribute("Cluster ID of the provider cluster that issued the credentials " +
				"(`spec.clusterID`). The API makes it immutable: changing it replaces the Identity."),
			"type": schema.StringAttribute{
				Optional: true, Computed: true,
				Default: stringdefault.StaticString(string(authv1beta1.ControlPlaneIdentityType)),
				MarkdownDescription: "What the identity is for: `ControlPlane` (default: the consumer's control plane, " +
					"which replicates ResourceSlices and NamespaceMaps) or `ResourceSlice` (a virtual node's). " +
					"Changing it replaces the Identity.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators: []validator.String{stringvalidator.OneOf(string(authv1beta1.ControlPlaneIdentityType),
					string(authv1beta1.ResourceSliceIdentityType))},
			},
			"remote_tenant_namespace": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The consumer's tenant namespace in the provider cluster, where the credentials work " +
					"(`spec.namespace` and the Secret's `liqo.io/remote-tenant-namespace` annotation). Updated in place.",
				Validators: dnsLabelValidators(),
			},
			"secret_name": derivedDefaultString("Name of the kubeconfig Secret; default: `kubeconfig-<name>`. Changing it "+
				"replaces the Identity.", stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(dnsLabelPattern, "must be a DNS label")),
			"kubeconfig_wo": schema.StringAttribute{
				Optional: true, WriteOnly: true, Sensitive: true,
				MarkdownDescription: "The kubeconfig, write-only (Terraform >= 1.11): sent to the provider at each apply, " +
					"never stored in the plan or the state. Change `kubeconfig_wo_version` to write a new value. " +
					"Conflicts with `kubeconfig`.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1), stringvalidator.AlsoRequires(path.MatchRoot("kubeconfig_wo_version"))},
			},
			"kubeconfig_wo_version": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Version of `kubeconfig_wo`: Terraform cannot see a write-only value change, so change " +
					"this number (e.g. to a timestamp or a counter) to have the new kubeconfig written. Required with `kubeconfig_wo`.",
				Validators: []validator.Int64{int64validator.AlsoRequires(path.MatchRoot("kubeconfig_wo"))},
			},
			"kubeconfig": schema.StringAttribute{
				Optional: true, Sensitive: true,
				MarkdownDescription: "The kubeconfig, for Terraform < 1.11. Sensitive: hidden in plan output, but " +
					"Terraform stores it in the state; prefer `kubeconfig_wo`. Conflicts with `kubeconfig_wo`.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"api_server": computedString("URL of the provider's API server, as found in the kubeconfig (also written to " +
				"the Identity's `spec.authParams.apiServer`)."),
		})
}

// ConfigValidators requires exactly one of kubeconfig_wo and kubeconfig.
func (r *identityResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		resourcevalidator.ExactlyOneOf(path.MatchRoot("kubeconfig_wo"), path.MatchRoot("kubeconfig")),
	}
}

// ModifyPlan shows the default names in the plan.
func (r *identityResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	plan, ok := plannedModel[identityModel](ctx, &r.clusterResource, req, resp)
	if !ok {
		return
	}
	name := plan.Name
	if name.IsUnknown() && !plan.ProviderClusterID.IsUnknown() && !plan.Type.IsUnknown() {
		name = types.StringValue(strings.ToLower(plan.Type.ValueString()) + "-" + plan.ProviderClusterID.ValueString())
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("name"), name)...)
	}
	if plan.SecretName.IsUnknown() && !name.IsUnknown() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("secret_name"), "kubeconfig-"+name.ValueString())...)
	}
}

// identityKubeconfig returns the kubeconfig of the configuration: the write-only attribute,
// which only the configuration has, or the sensitive one.
func identityKubeconfig(ctx context.Context, cfg interface {
	GetAttribute(context.Context, path.Path, interface{}) diag.Diagnostics
}, plan *identityModel) (string, diag.Diagnostics) {
	var wo types.String
	d := cfg.GetAttribute(ctx, path.Root("kubeconfig_wo"), &wo)
	if d.HasError() {
		return "", d
	}
	if !wo.IsNull() && !wo.IsUnknown() {
		return wo.ValueString(), d
	}
	if !plan.Kubeconfig.IsNull() && !plan.Kubeconfig.IsUnknown() {
		return plan.Kubeconfig.ValueString(), d
	}
	d.AddError("Missing kubeconfig", "set `kubeconfig_wo` (with `kubeconfig_wo_version`) or `kubeconfig`: "+
		"the value is unknown or empty at apply time")
	return "", d
}

// identityAuthParams extracts the API server, CA and client certificate of a kubeconfig's
// current context; the error says what is wrong with the kubeconfig.
func identityAuthParams(kubeconfig string) (authv1beta1.AuthParams, error) {
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		return authv1beta1.AuthParams{}, fmt.Errorf("the kubeconfig is not valid: %w", err)
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		if len(cfg.Contexts) != 1 {
			return authv1beta1.AuthParams{}, fmt.Errorf("the kubeconfig has no current-context among its %d contexts", len(cfg.Contexts))
		}
		for _, c := range cfg.Contexts {
			kctx = c
		}
	}
	cl, ok := cfg.Clusters[kctx.Cluster]
	if !ok || cl.Server == "" {
		return authv1beta1.AuthParams{}, fmt.Errorf("the kubeconfig's context names cluster %q, which has no server", kctx.Cluster)
	}
	p := authv1beta1.AuthParams{APIServer: cl.Server, CA: cl.CertificateAuthorityData, ProxyURL: cl.ProxyURL}
	if u, ok := cfg.AuthInfos[kctx.AuthInfo]; ok {
		p.SignedCRT = u.ClientCertificateData
	}
	return p, nil
}

func identityHash(kubeconfig string) []byte {
	sum := sha256.Sum256([]byte(kubeconfig))
	b, _ := json.Marshal(hex.EncodeToString(sum[:]))
	return b
}

// writeObjects creates or updates the Identity and its Secret from the plan and the kubeconfig.
// created tells whether the Identity was created (so that a later error must keep it in state).
func (r *identityResource) writeObjects(ctx context.Context, c *clusterClient, plan *identityModel, kubeconfig string, create bool) (created bool, err error) {
	params, err := identityAuthParams(kubeconfig)
	if err != nil {
		return false, fmt.Errorf("kubeconfig of Identity %s/%s: %w; give a kubeconfig such as liqo_consumer_identity's",
			plan.Namespace.ValueString(), plan.Name.ValueString(), err)
	}
	key := client.ObjectKey{Namespace: plan.Namespace.ValueString(), Name: plan.Name.ValueString()}
	id := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if !create {
		if err := c.ctrl.Get(ctx, key, id); err != nil {
			return created, fmt.Errorf("reading Identity %s in %s: %w", key, c.describe(), err)
		}
	}
	before := id.DeepCopy()
	forge.MutateIdentity(id, plan.ProviderClusterID.ValueString(), authv1beta1.IdentityType(plan.Type.ValueString()),
		plan.RemoteTenantNamespace.ValueString(), params)
	// This resource writes the kubeconfig Secret (its key is not the cluster's signing key): the
	// identity controller must not write another one.
	if id.Annotations == nil {
		id.Annotations = map[string]string{}
	}
	id.Annotations[consts.KubeconfigSecretAnnotation] = plan.SecretName.ValueString()
	if create {
		if err := c.ctrl.Create(ctx, id); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return created, fmt.Errorf("the Identity %s already exists in %s: import it with `terraform import <address> %s`",
					key, c.describe(), objectID(c.name, key.Namespace, key.Name))
			}
			return created, fmt.Errorf("creating Identity %s in %s: %w", key, c.describe(), err)
		}
		created = true
	} else if err := c.ctrl.Patch(ctx, id, client.MergeFrom(before)); err != nil {
		return created, fmt.Errorf("patching Identity %s in %s: %w", key, c.describe(), err)
	}
	plan.APIServer = types.StringValue(params.APIServer)

	return created, writeIdentitySecret(ctx, c, id, plan, kubeconfig)
}

// writeIdentitySecret creates or updates the kubeconfig Secret of Identity id, taking over only
// a Secret of the same identity (same labels).
func writeIdentitySecret(ctx context.Context, c *clusterClient, id *authv1beta1.Identity, plan *identityModel, kubeconfig string) error {
	secretKey := client.ObjectKey{Namespace: id.Namespace, Name: plan.SecretName.ValueString()}
	secret := &corev1.Secret{}
	err := c.ctrl.Get(ctx, secretKey, secret)
	exists := err == nil
	switch {
	case apierrors.IsNotFound(err):
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretKey.Namespace, Name: secretKey.Name}, Type: corev1.SecretTypeOpaque}
	case err != nil:
		return fmt.Errorf("reading Secret %s in %s: %w", secretKey, c.describe(), err)
	case secret.Labels[consts.RemoteClusterIDLabel] != plan.ProviderClusterID.ValueString() ||
		secret.Labels[consts.IdentityTypeLabel] != plan.Type.ValueString():
		// Only a Secret left over by this identity (same labels) is taken over.
		return fmt.Errorf("the Secret %s already exists in %s and is not the kubeconfig Secret of a %s identity of %s "+
			"(labels %s, %s): delete it or set `secret_name` to another name",
			secretKey, c.describe(), plan.Type.ValueString(), plan.ProviderClusterID.ValueString(), consts.IdentityTypeLabel, consts.RemoteClusterIDLabel)
	}
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Labels[consts.IdentityTypeLabel] = plan.Type.ValueString()
	secret.Labels[consts.RemoteClusterIDLabel] = plan.ProviderClusterID.ValueString()
	secret.Annotations[consts.RemoteTenantNamespaceAnnotation] = plan.RemoteTenantNamespace.ValueString()
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[consts.KubeconfigSecretKey] = []byte(kubeconfig)
	gvk, err := c.ctrl.GroupVersionKindFor(id)
	if err != nil {
		return fmt.Errorf("kind of Identity: %w", err)
	}
	// Owned by the Identity: the garbage collector removes it with it.
	secret.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: id.Name, UID: id.UID, BlockOwnerDeletion: ptr.To(true),
	}}
	if exists {
		err = c.ctrl.Update(ctx, secret)
	} else {
		err = c.ctrl.Create(ctx, secret)
	}
	if err != nil {
		return fmt.Errorf("writing Secret %s in %s: %w", secretKey, c.describe(), err)
	}
	return nil
}

// Create makes the Identity and its kubeconfig Secret.
func (r *identityResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	defer namedObjectIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	plan, ok := modelOf[identityModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	r.apply(ctx, &plan, req.Config, true, &resp.State, resp.Private, &resp.Diagnostics)
}

// privateState is a response's private state (resp.Private; the framework's type is internal).
type privateState interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// apply writes the Identity and its Secret from the plan and the configuration's kubeconfig
// (create says whether they are new), and saves the state and the kubeconfig's hash. A create
// that fails after the Identity was made still saves the state, so that it is not orphaned.
func (r *identityResource) apply(ctx context.Context, plan *identityModel, config tfsdk.Config, create bool, state *tfsdk.State,
	private privateState, diags *diag.Diagnostics,
) {
	summary := "Updating identity"
	if create {
		summary = "Creating identity"
	}
	kubeconfig, d := identityKubeconfig(ctx, config, plan)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	c, err := r.client(ctx, plan.Cluster, true)
	if err != nil {
		diags.AddError(summary, err.Error())
		return
	}
	created, err := r.writeObjects(ctx, c, plan, kubeconfig, create)
	if err != nil {
		diags.AddError(summary, err.Error())
		if !created {
			return
		}
		// The Identity may exist: keep it in the state so that it is not orphaned.
		if plan.APIServer.IsUnknown() {
			plan.APIServer = types.StringNull()
		}
	}
	plan.ID = types.StringValue(objectID(c.name, plan.Namespace.ValueString(), plan.Name.ValueString()))
	plan.KubeconfigWO = types.StringNull()
	diags.Append(state.Set(ctx, plan)...)
	if err == nil {
		diags.Append(private.SetKey(ctx, identityKubeconfigHashKey, identityHash(kubeconfig))...)
	}
}

// Read refreshes the state from the cluster. A missing Identity leaves the state (re-created by
// the next plan); a missing or changed kubeconfig Secret shows as an in-place update that
// writes it again.
func (r *identityResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	namedObjectIdentity.record(ctx, &req.State, resp.Identity, &resp.Diagnostics) // Read keeps what names the Identity
	state, ok := modelOf[identityModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	c, err := r.client(ctx, state.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError("Reading identity", err.Error())
		return
	}
	key := client.ObjectKey{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}
	id := &authv1beta1.Identity{}
	found, err := readObject(ctx, c, "Identity", key, id)
	if err != nil {
		resp.Diagnostics.AddError("Reading identity", err.Error())
		return
	}
	if !found {
		resp.State.RemoveResource(ctx)
		return
	}
	state.ID = types.StringValue(objectID(c.name, id.Namespace, id.Name))
	state.ProviderClusterID = types.StringValue(string(id.Spec.ClusterID))
	state.Type = types.StringValue(string(id.Spec.Type))
	state.RemoteTenantNamespace = types.StringValue(id.Spec.Namespace)
	state.APIServer = stringOrNull(id.Spec.AuthParams.APIServer)
	if state.SecretName.IsNull() || state.SecretName.ValueString() == "" {
		state.SecretName = types.StringValue("kubeconfig-" + id.Name)
		if id.Status.KubeconfigSecretRef != nil && id.Status.KubeconfigSecretRef.Name != "" {
			state.SecretName = types.StringValue(id.Status.KubeconfigSecretRef.Name)
		}
	}
	secret := &corev1.Secret{}
	secretKey := client.ObjectKey{Namespace: id.Namespace, Name: state.SecretName.ValueString()}
	err = c.ctrl.Get(ctx, secretKey, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		resp.Diagnostics.AddError("Reading identity", fmt.Sprintf("reading Secret %s in %s: %v", secretKey, c.describe(), err))
		return
	}
	var current string
	present := err == nil && secret.DeletionTimestamp == nil
	if present {
		current = string(secret.Data[consts.KubeconfigSecretKey])
		if secret.Annotations[consts.RemoteTenantNamespaceAnnotation] != id.Spec.Namespace {
			state.RemoteTenantNamespace = types.StringValue(secret.Annotations[consts.RemoteTenantNamespaceAnnotation])
		}
		if secret.Labels[consts.IdentityTypeLabel] != string(id.Spec.Type) {
			state.Type = types.StringValue(secret.Labels[consts.IdentityTypeLabel])
		}
	}
	if !state.Kubeconfig.IsNull() {
		// Sensitive mode: the state holds the value, so a changed Secret is an ordinary diff.
		state.Kubeconfig = types.StringNull()
		if present {
			state.Kubeconfig = stringOrNull(current)
		}
	} else if !state.KubeconfigWOVersion.IsNull() {
		// Write-only mode: only a hash is kept (private state); a missing or changed Secret
		// clears the version, so the plan shows an update that writes the configured value.
		want, d := req.Private.GetKey(ctx, identityKubeconfigHashKey)
		resp.Diagnostics.Append(d...)
		if !present || want != nil && string(want) != string(identityHash(current)) {
			state.KubeconfigWOVersion = types.Int64Null()
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update writes the Identity and the Secret again: the namespace annotation, and the kubeconfig
// from the configuration (a new one when kubeconfig_wo_version or kubeconfig changed).
func (r *identityResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	defer namedObjectIdentity.record(ctx, &resp.State, resp.Identity, &resp.Diagnostics)
	plan, ok := modelOf[identityModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	r.apply(ctx, &plan, req.Config, false, &resp.State, resp.Private, &resp.Diagnostics)
}

// Delete removes the Secret and the Identity, waiting until both are gone.
func (r *identityResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, ok := modelOf[identityModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, 5*time.Minute)
	resp.Diagnostics.Append(d...)
	c, err := r.client(ctx, state.Cluster, true)
	if err != nil {
		resp.Diagnostics.AddError("Deleting identity", err.Error())
		return
	}
	ns := state.Namespace.ValueString()
	if name := state.SecretName.ValueString(); name != "" {
		if err := deleteAndWait(ctx, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, timeout); err != nil {
			resp.Diagnostics.AddError("Deleting identity", err.Error())
			return
		}
	}
	if err := deleteAndWait(ctx, c, &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: state.Name.ValueString()}}, timeout); err != nil {
		resp.Diagnostics.AddError("Deleting identity", err.Error())
	}
}

// ImportState takes `[cluster/]namespace/name` of the Identity, or the identity. The kubeconfig
// is not imported: the first plan after the import writes the configured one (an in-place update).
func (r *identityResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	namedObjectIdentity.importState(ctx, req, resp, "Importing identity", objectIDParts(true))
}
