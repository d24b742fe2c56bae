package provider

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	networkingv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// publicKeyResource manages a PublicKey: the peer gateway's WireGuard public key.
type publicKeyResource struct {
	objectResource[publicKeyModel, *publicKeyModel, *networkingv1beta1.PublicKey]
}

type publicKeyModel struct {
	namespacedObject
	RemoteClusterID types.String `tfsdk:"remote_cluster_id"`
	PublicKey       types.String `tfsdk:"public_key"`
}

func newPublicKeyResource() resource.Resource {
	r := &publicKeyResource{}
	r.objectKind = objectKind[publicKeyModel, *networkingv1beta1.PublicKey]{
		typeName: "_public_key",
		kind:     "PublicKey", noun: "PublicKey", needLiqo: true, namespaced: true, timeout: 2 * time.Minute,
		build: func(_ context.Context, w objectWrite[publicKeyModel], pk *networkingv1beta1.PublicKey) error {
			return w.plan.apply(pk)
		},
		read: func(_ context.Context, _ *clusterClient, state *publicKeyModel, pk *networkingv1beta1.PublicKey) error {
			state.PublicKey = stringOrNull(base64.StdEncoding.EncodeToString(pk.Spec.PublicKey))
			state.RemoteClusterID = types.StringValue(pk.Labels[consts.RemoteClusterIDLabel])
			return nil
		},
	}
	return r
}

// Schema describes liqo_public_key.
func (r *publicKeyResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = objectSchema(ctx, "[cluster/]namespace/name", timeouts.Opts{Delete: true},
		"The peer gateway's WireGuard public key: a `PublicKey` (networking.liqo.io/v1beta1) in the "+
			"tenant namespace, labelled `liqo.io/remote-cluster-id` (the peer) and `networking.liqo.io/gateway-resource=true`, "+
			"which the local gateway uses to authenticate the peer. Feed it the peer's `liqo_gateway_keys.public_key`.",
		map[string]schema.Attribute{
			"namespace":         nwNamespaceAttribute(),
			"name":              nwNameAttribute("gw-publickey", "PublicKey"),
			"remote_cluster_id": nwRemoteClusterIDAttribute(false),
			"public_key": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The peer's WireGuard public key: 32 bytes in base64 (44 characters, as `wg pubkey` " +
					"prints). Changing it updates the object in place.",
				Validators: []validator.String{nwWGKeyValidator()},
			},
		})
}

func (m *publicKeyModel) apply(pk *networkingv1beta1.PublicKey) error {
	key, err := nwParseWGKey(m.PublicKey.ValueString())
	if err != nil {
		return fmt.Errorf("public_key: %w", err)
	}
	forge.MutatePublicKey(pk, m.RemoteClusterID.ValueString(), key[:])
	return nil
}
