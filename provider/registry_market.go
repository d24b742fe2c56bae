package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// marketResources are the resources of seed 004's advertisement, on the provider.
func marketResources() []func() resource.Resource {
	return []func() resource.Resource{newOfferResource}
}

// marketDataSources are the data sources of seed 004's advertisement and contract, on the consumer.
func marketDataSources() []func() datasource.DataSource {
	return []func() datasource.DataSource{newOffersDataSource, newContractDataSource}
}
