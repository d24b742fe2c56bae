package provider

import "github.com/hashicorp/terraform-plugin-framework/resource"

// authenticationResources are the resources of the authentication module.
func authenticationResources() []func() resource.Resource {
	return []func() resource.Resource{newTenantResource, newIdentityResource, newConsumerIdentityResource}
}
