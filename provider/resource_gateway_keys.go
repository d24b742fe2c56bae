package provider

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

var (
	_ resource.Resource                = (*gatewayKeysResource)(nil)
	_ resource.ResourceWithConfigure   = (*gatewayKeysResource)(nil)
	_ resource.ResourceWithImportState = (*gatewayKeysResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*gatewayKeysResource)(nil)
)

// gatewayKeysResource manages the Secret holding this cluster's WireGuard key pair for one
// peering. The private key is never in Terraform's plan or state.
type gatewayKeysResource struct {
	clusterResource
}

type gatewayKeysModel struct {
	ID                  types.String   `tfsdk:"id"`
	Cluster             types.String   `tfsdk:"cluster"`
	Namespace           types.String   `tfsdk:"namespace"`
	Name                types.String   `tfsdk:"name"`
	RemoteClusterID     types.String   `tfsdk:"remote_cluster_id"`
	PrivateKeyWO        types.String   `tfsdk:"private_key_wo"`
	PrivateKeyWOVersion types.Int64    `tfsdk:"private_key_wo_version"`
	PublicKey           types.String   `tfsdk:"public_key"`
	Timeouts            timeouts.Value `tfsdk:"timeouts"`
}

func newGatewayKeysResource() resource.Resource { return &gatewayKeysResource{} }

// Metadata names the resource liqo_gateway_keys.
func (r *gatewayKeysResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_gateway_keys"
}

// Schema describes liqo_gateway_keys.
func (r *gatewayKeysResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "This cluster's WireGuard key pair for one peering: the Secret (data keys `privateKey` and " +
			"`publicKey`, the raw 32 bytes of each) that the gateway server or client references in `secret_ref`, " +
			"labelled `liqo.io/remote-cluster-id` and `networking.liqo.io/gateway-resource=true`.\n\n" +
			"The private key never reaches Terraform's plan or state. Either give it through the write-only attribute " +
			"`private_key_wo` (Terraform >= 1.11; e.g. from the `liqo_wireguard_keypair` ephemeral resource), or leave it " +
			"out and the provider generates one when it creates the Secret. A generated key is made by the provider " +
			"process on the machine running Terraform (not in the cluster), sent only to the cluster's API server " +
			"and never stored by Terraform. Changing `private_key_wo_version` rotates the key in place (to the " +
			"configured `private_key_wo`, or to a newly generated key when it is not set). Export `public_key` to the " +
			"peer's `liqo_public_key`.",
		Attributes: map[string]schema.Attribute{
			"id":                idAttribute("[cluster/]namespace/name"),
			"cluster":           clusterAttribute(),
			"namespace":         nwNamespaceAttribute(),
			"name":              nwNameAttribute("gw-keys", "Secret"),
			"remote_cluster_id": nwRemoteClusterIDAttribute(false),
			"private_key_wo": schema.StringAttribute{
				Optional: true, WriteOnly: true, Sensitive: true,
				MarkdownDescription: "Write-only (Terraform >= 1.11): the WireGuard private key, 32 bytes in base64 as " +
					"`wg genkey` prints. It is written to the Secret on create and whenever `private_key_wo_version` " +
					"changes, and never stored in the plan or state. Changing only this value does nothing: bump " +
					"`private_key_wo_version` too. Leave it out to have the provider generate the key.",
				Validators: []validator.String{
					nwWGKeyValidator{},
					stringvalidator.AlsoRequires(path.MatchRoot("private_key_wo_version")),
				},
			},
			"private_key_wo_version": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Trigger for `private_key_wo`: changing it rotates the key in place, writing the " +
					"configured `private_key_wo` or, without one, a newly generated key. Required with `private_key_wo`.",
				Validators: []validator.Int64{int64validator.AtLeast(0)},
			},
			"public_key": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The public key (base64), read from the Secret. Give it to the peer cluster's " +
					"`liqo_public_key`. Known after apply when the key is created or rotated.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Delete: true}),
		},
	}
}

// ModifyPlan checks the cluster key and shows the public key as unknown when the key rotates.
func (r *gatewayKeysResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.clusterResource.ModifyPlan(ctx, req, resp)
	if req.Plan.Raw.IsNull() || req.State.Raw.IsNull() || resp.Diagnostics.HasError() {
		return
	}
	var plan, state gatewayKeysModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !plan.PrivateKeyWOVersion.Equal(state.PrivateKeyWOVersion) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("public_key"), types.StringUnknown())...)
	}
}

// gatewayKeysPrivateKey returns the configured write-only private key or, when none is
// configured, a newly generated one.
func gatewayKeysPrivateKey(ctx context.Context, config tfsdk.Config) (wgtypes.Key, error) {
	var wo types.String
	if d := config.GetAttribute(ctx, path.Root("private_key_wo"), &wo); d.HasError() {
		return wgtypes.Key{}, fmt.Errorf("reading private_key_wo: %v", d)
	}
	if wo.IsUnknown() {
		return wgtypes.Key{}, fmt.Errorf("private_key_wo is not known at apply time")
	}
	if wo.IsNull() {
		k, err := wgtypes.GeneratePrivateKey()
		if err != nil {
			return wgtypes.Key{}, fmt.Errorf("generating a WireGuard private key: %w", err)
		}
		return k, nil
	}
	k, err := nwParseWGKey(wo.ValueString())
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("private_key_wo: %w", err)
	}
	return k, nil
}

// setKeys writes the key pair into the Secret's data.
func gatewayKeysSetData(s *corev1.Secret, priv wgtypes.Key) {
	pub := priv.PublicKey()
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[consts.PrivateKeySecretKey] = append([]byte(nil), priv[:]...)
	s.Data[consts.PublicKeySecretKey] = append([]byte(nil), pub[:]...)
}

// gatewayKeysPublic reads the public key from a key Secret (deriving it from the private key
// when the publicKey entry is missing), as base64.
func gatewayKeysPublic(s *corev1.Secret) (string, error) {
	if pub := s.Data[consts.PublicKeySecretKey]; len(pub) == wgtypes.KeyLen {
		return base64.StdEncoding.EncodeToString(pub), nil
	}
	if priv := s.Data[consts.PrivateKeySecretKey]; len(priv) == wgtypes.KeyLen {
		k, err := wgtypes.NewKey(priv)
		if err != nil {
			return "", fmt.Errorf("data key %s: %w", consts.PrivateKeySecretKey, err)
		}
		return k.PublicKey().String(), nil
	}
	return "", fmt.Errorf("the Secret has neither a %d-byte %s nor a %d-byte %s entry", wgtypes.KeyLen,
		consts.PublicKeySecretKey, wgtypes.KeyLen, consts.PrivateKeySecretKey)
}

// Create makes the Secret with the configured or a generated key pair.
func (r *gatewayKeysResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan gatewayKeysModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	const summary = "Creating WireGuard key Secret"
	c, err := r.client(ctx, plan.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	priv, err := gatewayKeysPrivateKey(ctx, req.Config)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: plan.Name.ValueString(), Namespace: plan.Namespace.ValueString(),
			Labels: nwLabels(plan.RemoteClusterID.ValueString(), true),
		},
		Type: corev1.SecretTypeOpaque,
	}
	gatewayKeysSetData(s, priv)
	ref := objectID("", s.Namespace, s.Name)
	if err := c.ctrl.Create(ctx, s); err != nil {
		switch {
		case apierrors.IsAlreadyExists(err):
			resp.Diagnostics.AddError(summary, fmt.Sprintf("Secret %s already exists in %s: import it with "+
				"`terraform import <address> %s`, or choose another `name`", ref, c.describe(), objectID(c.name, s.Namespace, s.Name)))
		case apierrors.IsNotFound(err):
			resp.Diagnostics.AddError(summary, fmt.Sprintf("creating Secret %s in %s: namespace %s does not exist; "+
				"create it first (liqo_tenant_namespace) and reference its name", ref, c.describe(), s.Namespace))
		default:
			resp.Diagnostics.AddError(summary, fmt.Sprintf("creating Secret %s in %s: %v", ref, c.describe(), err))
		}
		return
	}
	plan.ID = types.StringValue(objectID(c.name, s.Namespace, s.Name))
	plan.PublicKey = types.StringValue(priv.PublicKey().String())
	plan.PrivateKeyWO = types.StringNull()
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Read refreshes the labels and the public key; a Secret deleted out of band leaves the state.
func (r *gatewayKeysResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state gatewayKeysModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	const summary = "Reading WireGuard key Secret"
	c, err := r.client(ctx, state.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}
	found, err := readObject(ctx, c, "Secret", key, s)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	if !found {
		resp.State.RemoveResource(ctx)
		return
	}
	pub, err := gatewayKeysPublic(s)
	if err != nil {
		resp.Diagnostics.AddError(summary, fmt.Sprintf("Secret %s in %s is not a WireGuard key Secret: %v; "+
			"delete it or rotate the key (change private_key_wo_version)", objectID("", key.Namespace, key.Name), c.describe(), err))
		return
	}
	state.PublicKey = types.StringValue(pub)
	state.RemoteClusterID = types.StringValue(s.Labels[consts.RemoteClusterIDLabel])
	state.ID = types.StringValue(objectID(c.name, s.Namespace, s.Name))
	state.PrivateKeyWO = types.StringNull()
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update relabels the Secret and, when private_key_wo_version changed, rotates the key.
func (r *gatewayKeysResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state gatewayKeysModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	const summary = "Updating WireGuard key Secret"
	c, err := r.client(ctx, plan.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: plan.Namespace.ValueString(), Name: plan.Name.ValueString()}
	ref := objectID("", key.Namespace, key.Name)
	err = patchObject(ctx, c, "Secret", key, s, func() error {
		nwSetLabels(s, nwLabels(plan.RemoteClusterID.ValueString(), true))
		if !plan.PrivateKeyWOVersion.Equal(state.PrivateKeyWOVersion) {
			priv, err := gatewayKeysPrivateKey(ctx, req.Config)
			if err != nil {
				return err
			}
			gatewayKeysSetData(s, priv)
		}
		return nil
	})
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	pub, err := gatewayKeysPublic(s)
	if err != nil {
		resp.Diagnostics.AddError(summary, fmt.Sprintf("Secret %s in %s: %v", ref, c.describe(), err))
		return
	}
	plan.PublicKey = types.StringValue(pub)
	plan.ID = types.StringValue(objectID(c.name, s.Namespace, s.Name))
	plan.PrivateKeyWO = types.StringNull()
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Delete removes the Secret and waits until it is gone.
func (r *gatewayKeysResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state gatewayKeysModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, 2*time.Minute)
	resp.Diagnostics.Append(d...)
	c, err := r.client(ctx, state.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError("Deleting WireGuard key Secret", err.Error())
		return
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: state.Namespace.ValueString(), Name: state.Name.ValueString()}}
	if err := deleteAndWait(ctx, c, s, timeout); err != nil {
		resp.Diagnostics.AddError("Deleting WireGuard key Secret", err.Error())
	}
}

// ImportState takes `[cluster/]namespace/name`. private_key_wo_version is not imported: if the
// configuration sets it, the next apply writes the configured (or a generated) key.
func (r *gatewayKeysResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	const summary = "Importing WireGuard key Secret"
	cluster, namespace, name, err := parseObjectID(req.ID, true)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	c, err := r.client(ctx, types.StringValue(cluster), false)
	if err != nil {
		resp.Diagnostics.AddError(summary, err.Error())
		return
	}
	s := &corev1.Secret{}
	if err := c.ctrl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		resp.Diagnostics.AddError(summary, fmt.Sprintf("reading Secret %s/%s in %s: %v", namespace, name, c.describe(), err))
		return
	}
	if _, err := gatewayKeysPublic(s); err != nil {
		resp.Diagnostics.AddError(summary, fmt.Sprintf("Secret %s/%s in %s is not a WireGuard key Secret: %v", namespace, name, c.describe(), err))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("cluster"), stringOrNull(cluster))...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), namespace)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
}
