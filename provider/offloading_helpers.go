package provider

import (
	"context"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// offloadingDataSource is embedded by the data sources: it receives the provider's cluster set
// and resolves the `cluster` attribute, like clusterResource does for resources.
type offloadingDataSource struct {
	clusterUser
}

// Configure receives the cluster set made by the provider's Configure.
func (d *offloadingDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.configure(req.ProviderData, &resp.Diagnostics)
}

// deferred defers the read, and says so, when Terraform allows deferred reads and the cluster
// named by the `cluster` attribute cannot be reached before apply (a cluster created in the same
// run): it is read in a later plan.
func (d *offloadingDataSource) deferred(req datasource.ReadRequest, resp *datasource.ReadResponse, cluster types.String) bool {
	if d.clusters == nil {
		return false
	}
	resp.Deferred = d.clusters.deferral(req.ClientCapabilities.DeferralAllowed, cluster).dataSource()
	return resp.Deferred != nil
}

// offloadingDataSourceClusterAttribute is the `cluster` attribute of the data sources.
func offloadingDataSourceClusterAttribute() dsschema.StringAttribute {
	return dsschema.StringAttribute{
		Optional: true,
		MarkdownDescription: "Key of the provider's `clusters` map naming the cluster to read; " +
			"default: the provider block's own connection.",
	}
}

// dataSourceComputedString is a string a data source reads.
func dataSourceComputedString(description string) dsschema.StringAttribute {
	return dsschema.StringAttribute{Computed: true, MarkdownDescription: description}
}

// offloadingQuantityString keeps the configured spelling of a quantity when the cluster holds
// the same amount (the API server canonicalizes quantities: 1024Mi comes back as 1Gi), so a
// configuration that says the same thing differently is not drift.
func offloadingQuantityString(prior types.String, q resource.Quantity) types.String {
	if !prior.IsNull() && !prior.IsUnknown() {
		if pq, err := resource.ParseQuantity(prior.ValueString()); err == nil && pq.Cmp(q) == 0 {
			return prior
		}
	}
	return types.StringValue(q.String())
}

// offloadingResourceListString renders a resource list for messages, sorted by name.
func offloadingResourceListString(l corev1.ResourceList) string {
	if len(l) == 0 {
		return "{}"
	}
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		q := l[corev1.ResourceName(n)]
		parts[i] = n + "=" + q.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
