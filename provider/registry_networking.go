package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// networkingResources are the resources of the networking module.
func networkingResources() []func() resource.Resource {
	return []func() resource.Resource{
		newGatewayKeysResource,
		newPublicKeyResource,
		newGatewayServerResource,
		newGatewayClientResource,
		newNetworkConfigurationResource,
	}
}

// networkingEphemeralResources are the ephemeral resources of the networking module.
func networkingEphemeralResources() []func() ephemeral.EphemeralResource {
	return []func() ephemeral.EphemeralResource{newWireguardKeypairEphemeral}
}

// networkingFunctions are the provider functions of the networking module.
func networkingFunctions() []func() function.Function {
	return []func() function.Function{newWireguardPublicKeyFunction}
}
