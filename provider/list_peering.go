package provider

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

var _ list.ListResourceWithConfigure = (*peeringList)(nil)

// peeringList is the list resource of liqo_peering: the peerings between clusters of the
// provider's clusters map, whoever made them (Terraform or liqoctl). A consumer's ForeignCluster
// of role Provider (or ConsumerAndProvider) whose cluster ID is that of another key of the map
// is a candidate; liqo_peering's own Read, run as after an import, decides whether it is a
// peering (anything it made remains) and makes its state.
type peeringList struct {
	listUser
}

type peeringListModel struct {
	Clusters        types.List   `tfsdk:"clusters"`
	ConsumerCluster types.String `tfsdk:"consumer_cluster"`
	ProviderCluster types.String `tfsdk:"provider_cluster"`
}

func newPeeringList() list.ListResource { return &peeringList{} }

// Metadata names the list resource liqo_peering.
func (l *peeringList) Metadata(ctx context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	(&peeringResource{}).Metadata(ctx, req, resp)
}

// ListResourceConfigSchema describes the list block's config: the clusters to look in, and the
// consumer or provider.
func (l *peeringList) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	side := func(role string) listschema.StringAttribute {
		return listschema.StringAttribute{Optional: true,
			MarkdownDescription: "Only the peerings whose " + role + " is this key of the provider's `clusters` map."}
	}
	resp.Schema = listschema.Schema{
		MarkdownDescription: "The peerings between clusters of the provider's `clusters` map, as `liqo_peering` " +
			"resources: those Terraform made and those `liqoctl peer` made. A peering is found from the consumer's " +
			"`ForeignCluster` of the provider (role `Provider` or `ConsumerAndProvider`) and is listed when `liqo_peering`'s " +
			"refresh keeps it, as after an import: while anything it made remains (a half-made one reads as not up). Each cluster looked in must be reachable " +
			"and have the liqo API; ForeignClusters of clusters outside the map are not peerings Terraform can name, " +
			"and are left out.",
		Attributes: map[string]listschema.Attribute{
			"clusters": listschema.ListAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Keys of the provider's `clusters` map to look in: the peerings between two of them " +
					"are listed. Default: every key of the map.",
			},
			"consumer_cluster": side("consumer"),
			"provider_cluster": side("provider"),
		},
	}
}

// peeringCandidate is a pair of keys that may be a peering, and their cluster IDs.
type peeringCandidate struct {
	consumer, provider     string
	consumerID, providerID corev1beta1.ClusterID
}

// List lists the peerings: those the consumers' ForeignClusters show, confirmed and read by
// liqo_peering's Read.
func (l *peeringList) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	const summary = "Listing peerings"
	var diags diag.Diagnostics
	cfg, ok := modelOf[peeringListModel](ctx, req.Config, &diags)
	if !ok {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	candidates, err := l.candidates(ctx, cfg)
	if err != nil {
		stream.Results = listError(summary, err.Error())
		return
	}
	res := &peeringResource{clusterUser: l.clusterUser}
	stream.Results = func(push func(list.ListResult) bool) {
		push = limited(req.Limit, push)
		for _, p := range candidates {
			t := peeringIdentity.targetOf(map[string]types.String{
				"consumer_cluster": types.StringValue(p.consumer), "provider_cluster": types.StringValue(p.provider),
			})
			display := fmt.Sprintf("%s -> %s (%s -> %s)", p.consumer, p.provider, p.consumerID, p.providerID)
			result, state := peeringIdentity.listed(ctx, req, t, display)
			if !result.Diagnostics.HasError() {
				read := resource.ReadResponse{State: state, Identity: result.Identity}
				res.Read(ctx, resource.ReadRequest{State: state}, &read)
				result.Diagnostics.Append(read.Diagnostics...)
				if read.State.Raw.IsNull() {
					continue // the ForeignCluster outlives the peering
				}
				if req.IncludeResource {
					include(&result, read.State)
				}
			}
			if !push(result) {
				return
			}
		}
	}
}

// candidates are the pairs of keys to look at: for each consumer key looked in, the
// ForeignClusters of role Provider (or ConsumerAndProvider) whose cluster ID is that of another
// key looked in.
func (l *peeringList) candidates(ctx context.Context, cfg peeringListModel) ([]peeringCandidate, error) {
	if l.clusters == nil {
		return nil, fmt.Errorf("the liqo provider is not configured")
	}
	keys := l.clusters.names()
	if !cfg.Clusters.IsNull() {
		keys = nil
		if d := cfg.Clusters.ElementsAs(ctx, &keys, false); d.HasError() {
			return nil, fmt.Errorf("config.clusters: %w", diagsError(d))
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no cluster to look in: liqo_peering lists the peerings between keys of the provider's " +
			"`clusters` map; add the clusters there (and to config.clusters, when it is set)")
	}
	for attr, key := range map[string]string{"consumer_cluster": cfg.ConsumerCluster.ValueString(), "provider_cluster": cfg.ProviderCluster.ValueString()} {
		if key != "" && !slices.Contains(keys, key) {
			return nil, fmt.Errorf("config.%s = %q is not among the clusters looked in (%s): add it to config.clusters or "+
				"the provider's `clusters` map", attr, key, quoteList(keys))
		}
	}
	clients := map[string]peering.Cluster{}
	keyOf := map[corev1beta1.ClusterID]string{}
	idOf := map[string]corev1beta1.ClusterID{}
	for _, key := range keys {
		if key == "" {
			return nil, fmt.Errorf("config.clusters has an empty key: name keys of the provider's `clusters` map")
		}
		if _, err := l.clusters.lookup(key); err != nil {
			return nil, fmt.Errorf("config.clusters: %w", err)
		}
		c, err := l.clusters.getWithLiqo(ctx, key)
		if err == nil {
			clients[key] = c.peeringCluster(fmt.Sprintf("cluster %q", key))
			idOf[key], err = peering.ClusterID(ctx, clients[key])
		}
		switch {
		case err != nil && cfg.Clusters.IsNull():
			return nil, fmt.Errorf("%w; config.clusters is not set, so the list looks in every cluster of the provider's "+
				"`clusters` map: fix that cluster's connection, or set config.clusters to the keys to look in", err)
		case err != nil:
			return nil, fmt.Errorf("config.clusters: %w; fix that cluster's connection, or leave it out of config.clusters", err)
		}
		id := idOf[key]
		if _, dup := keyOf[id]; !dup {
			keyOf[id] = key // the first key of a cluster named twice
		}
	}
	var out []peeringCandidate
	for _, consumer := range keys {
		if want := cfg.ConsumerCluster.ValueString(); want != "" && consumer != want {
			continue
		}
		fcs := &corev1beta1.ForeignClusterList{}
		if err := clients[consumer].Client.List(ctx, fcs); err != nil {
			return nil, fmt.Errorf("listing the ForeignClusters of %s: %w", clients[consumer].Name, err)
		}
		for _, fc := range fcs.Items {
			provider, known := keyOf[fc.Spec.ClusterID]
			role := fc.Status.Role
			switch {
			case !known, provider == consumer, fc.Spec.ClusterID == idOf[consumer],
				role != corev1beta1.ProviderRole && role != corev1beta1.ConsumerAndProviderRole,
				cfg.ProviderCluster.ValueString() != "" && provider != cfg.ProviderCluster.ValueString():
				continue
			}
			out = append(out, peeringCandidate{consumer: consumer, provider: provider, consumerID: idOf[consumer], providerID: fc.Spec.ClusterID})
		}
	}
	slices.SortFunc(out, func(a, b peeringCandidate) int {
		return cmp.Or(strings.Compare(a.consumer, b.consumer), strings.Compare(a.provider, b.provider))
	})
	return out, nil
}
