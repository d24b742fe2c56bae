package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// offloadingResources are the resources of the offloading module.
func offloadingResources() []func() resource.Resource {
	return []func() resource.Resource{newResourceSliceResource, newVirtualNodeResource, newNamespaceOffloadingResource, newPeeringResource,
		newTetheringResource}
}

// offloadingDataSources are the data sources about clusters and peerings.
func offloadingDataSources() []func() datasource.DataSource {
	return []func() datasource.DataSource{newClusterDataSource, newForeignClusterDataSource}
}
