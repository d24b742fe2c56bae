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
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// gatewayKeysResource manages the Secret holding this cluster's WireGuard key pair for one
// peering. The private key is never in Terraform's plan or state.
type gatewayKeysResource struct {
	objectResource[gatewayKeysModel, *gatewayKeysModel, *corev1.Secret]
}

type gatewayKeysModel struct {
	namespacedObject
	RemoteClusterID     types.String `tfsdk:"remote_cluster_id"`
	PrivateKeyWO        types.String `tfsdk:"private_key_wo"`
	PrivateKeyWOVersion types.Int64  `tfsdk:"private_key_wo_version"`
	PublicKey           types.String `tfsdk:"public_key"`
}

func newGatewayKeysResource() resource.Resource {
	r := &gatewayKeysResource{}
	r.objectKind = objectKind[gatewayKeysModel, *corev1.Secret]{
		typeName: "_gateway_keys",
		kind:     "Secret", noun: "WireGuard key Secret", namespaced: true, timeout: 2 * time.Minute,
		build:   gatewayKeysBuild,
		read:    gatewayKeysRead,
		written: gatewayKeysRead,
		imported: func(c *clusterClient, s *corev1.Secret) error {
			if _, err := gatewayKeysPublic(s); err != nil {
				return fmt.Errorf("the Secret %s/%s in %s is not a WireGuard key Secret: %w", s.Namespace, s.Name, c.describe(), err)
			}
			return nil
		},
	}
	return r
}

// Schema describes liqo_gateway_keys.
func (r *gatewayKeysResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/name", timeouts.Opts{Delete: true},
		"This cluster's WireGuard key pair for one peering: the Secret (data keys `privateKey` and "+
			"`publicKey`, the raw 32 bytes of each) that the gateway server or client references in `secret_ref`, "+
			"labelled `liqo.io/remote-cluster-id` and `networking.liqo.io/gateway-resource=true`.\n\n"+
			"The private key never reaches Terraform's plan or state. Either give it through the write-only attribute "+
			"`private_key_wo` (Terraform >= 1.11; e.g. from the `liqo_wireguard_keypair` ephemeral resource), or leave it "+
			"out and the provider generates one when it creates the Secret. A generated key is made by the provider "+
			"process on the machine running Terraform (not in the cluster), sent only to the cluster's API server "+
			"and never stored by Terraform. Changing `private_key_wo_version` rotates the key in place (to the "+
			"configured `private_key_wo`, or to a newly generated key when it is not set). Export `public_key` to the "+
			"peer's `liqo_public_key`.",
		map[string]schema.Attribute{
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
					nwWGKeyValidator(),
					stringvalidator.AlsoRequires(path.MatchRoot("private_key_wo_version")),
				},
			},
			"private_key_wo_version": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Trigger for `private_key_wo`: changing it rotates the key in place, writing the " +
					"configured `private_key_wo` or, without one, a newly generated key. Required with `private_key_wo`.",
				Validators: []validator.Int64{int64validator.AtLeast(0)},
			},
			"public_key": stableComputedString("The public key (base64), read from the Secret. Give it to the peer " +
				"cluster's `liqo_public_key`. Known after apply when the key is created or rotated."),
		})
}

// ModifyPlan checks the cluster key and shows the public key as unknown when the key rotates.
func (r *gatewayKeysResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	plan, ok := plannedModel[gatewayKeysModel](ctx, &r.clusterResource, req, resp)
	if !ok {
		return
	}
	state, ok := priorModel[gatewayKeysModel](ctx, req, resp)
	if !ok {
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

// gatewayKeysBuild labels the Secret and, on create or when private_key_wo_version changed,
// writes the key pair from the configuration's write-only private key.
func gatewayKeysBuild(ctx context.Context, w objectWrite[gatewayKeysModel], s *corev1.Secret) error {
	if w.state != nil && w.plan.PrivateKeyWOVersion.Equal(w.state.PrivateKeyWOVersion) {
		forge.MutateGatewayKeys(s, w.plan.RemoteClusterID.ValueString(), nil)
		return nil
	}
	priv, err := gatewayKeysPrivateKey(ctx, w.config)
	if err != nil {
		return err
	}
	if w.state == nil {
		s.Type = corev1.SecretTypeOpaque
	}
	forge.MutateGatewayKeys(s, w.plan.RemoteClusterID.ValueString(), &priv)
	return nil
}

// gatewayKeysRead sets the public key and the peer from the Secret; the private key stays out
// of the state.
func gatewayKeysRead(_ context.Context, c *clusterClient, m *gatewayKeysModel, s *corev1.Secret) error {
	pub, err := gatewayKeysPublic(s)
	if err != nil {
		return fmt.Errorf("the Secret %s in %s is not a WireGuard key Secret: %w; delete it or rotate the key (change private_key_wo_version)",
			objectID("", s.Namespace, s.Name), c.describe(), err)
	}
	m.PublicKey = types.StringValue(pub)
	m.RemoteClusterID = types.StringValue(s.Labels[consts.RemoteClusterIDLabel])
	m.PrivateKeyWO = types.StringNull()
	return nil
}
