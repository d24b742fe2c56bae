package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

var _ ephemeral.EphemeralResource = (*wireguardKeypairEphemeral)(nil)

// wireguardKeypairEphemeral generates a WireGuard key pair that never reaches plan or state.
type wireguardKeypairEphemeral struct{}

type wireguardKeypairModel struct {
	PrivateKey types.String `tfsdk:"private_key"`
	PublicKey  types.String `tfsdk:"public_key"`
}

func newWireguardKeypairEphemeral() ephemeral.EphemeralResource { return &wireguardKeypairEphemeral{} }

// Metadata names the ephemeral resource liqo_wireguard_keypair.
func (e *wireguardKeypairEphemeral) Metadata(_ context.Context, req ephemeral.MetadataRequest, resp *ephemeral.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_wireguard_keypair"
}

// Schema describes liqo_wireguard_keypair.
func (e *wireguardKeypairEphemeral) Schema(_ context.Context, _ ephemeral.SchemaRequest, resp *ephemeral.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Generates a WireGuard key pair (Terraform >= 1.10) in the provider process. Being ephemeral, it " +
			"is never stored in the plan or the state, and it is generated anew each time Terraform opens it (once in " +
			"the plan, once in the apply): feed `private_key` only to write-only attributes such as " +
			"`liqo_gateway_keys.private_key_wo`, with a `private_key_wo_version` that decides when the stored key " +
			"changes. To give the peer the public key, use `liqo_gateway_keys.public_key`, which is read from the " +
			"Secret actually written, not this resource's `public_key`.",
		Attributes: map[string]schema.Attribute{
			"private_key": schema.StringAttribute{
				Computed: true, Sensitive: true,
				MarkdownDescription: "The private key: 32 bytes in base64, as `wg genkey` prints.",
			},
			"public_key": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The public key of `private_key`: 32 bytes in base64, as `wg pubkey` prints.",
			},
		},
	}
}

// Open generates the key pair.
func (e *wireguardKeypairEphemeral) Open(ctx context.Context, _ ephemeral.OpenRequest, resp *ephemeral.OpenResponse) {
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		resp.Diagnostics.AddError("Generating a WireGuard key pair", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.Result.Set(ctx, &wireguardKeypairModel{
		PrivateKey: types.StringValue(k.String()),
		PublicKey:  types.StringValue(k.PublicKey().String()),
	})...)
}
