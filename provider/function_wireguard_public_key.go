package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/function"
)

var _ function.Function = (*wireguardPublicKeyFunction)(nil)

// wireguardPublicKeyFunction derives a WireGuard public key from a private key.
type wireguardPublicKeyFunction struct{}

func newWireguardPublicKeyFunction() function.Function { return &wireguardPublicKeyFunction{} }

// Metadata names the function wireguard_public_key.
func (f *wireguardPublicKeyFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "wireguard_public_key"
}

// Definition describes provider::liqo::wireguard_public_key(private_key).
func (f *wireguardPublicKeyFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Derive a WireGuard public key from a private key",
		MarkdownDescription: "Returns the WireGuard public key (base64, as `wg pubkey` prints) of a private key (base64, as " +
			"`wg genkey` prints), computed locally. The result is sensitive or ephemeral when the argument is.",
		Parameters: []function.Parameter{
			function.StringParameter{
				Name:                "private_key",
				MarkdownDescription: "The WireGuard private key: 32 bytes in standard base64 (44 characters).",
			},
		},
		Return: function.StringReturn{},
	}
}

// Run derives the public key. The error never repeats the argument: it is a private key.
func (f *wireguardPublicKeyFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var priv string
	resp.Error = function.ConcatFuncErrors(resp.Error, req.Arguments.Get(ctx, &priv))
	if resp.Error != nil {
		return
	}
	k, err := nwParseWGKey(priv)
	if err != nil {
		resp.Error = function.ConcatFuncErrors(resp.Error, function.NewArgumentFuncError(0,
			"private_key is not a WireGuard private key: "+err.Error()+"; generate one with `wg genkey` or the liqo_wireguard_keypair ephemeral resource"))
		return
	}
	resp.Error = function.ConcatFuncErrors(resp.Error, resp.Result.Set(ctx, k.PublicKey().String()))
}
