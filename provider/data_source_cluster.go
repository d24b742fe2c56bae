package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/peerkit/terraform-provider-liqo/internal/clusterid"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

var (
	_ datasource.DataSource              = (*clusterDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*clusterDataSource)(nil)
)

// clusterDataSource reads what a cluster says about itself: its ID, CIDRs, API server, version.
type clusterDataSource struct {
	offloadingDataSource
}

type clusterDataSourceModel struct {
	Cluster           types.String `tfsdk:"cluster"`
	ClusterID         types.String `tfsdk:"cluster_id"`
	PodCIDR           types.String `tfsdk:"pod_cidr"`
	PodCIDRs          types.List   `tfsdk:"pod_cidrs"`
	ExternalCIDR      types.String `tfsdk:"external_cidr"`
	APIServerURL      types.String `tfsdk:"api_server_url"`
	KubernetesVersion types.String `tfsdk:"kubernetes_version"`
}

func newClusterDataSource() datasource.DataSource { return &clusterDataSource{} }

// Metadata names the data source liqo_cluster.
func (d *clusterDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cluster"
}

// Schema describes liqo_cluster.
func (d *clusterDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "What a cluster running the liqo controllers says about itself: its cluster ID (ConfigMap " +
			"`liqo/liqo-clusterid-configmap`, key `CLUSTER_ID`), its pod and external CIDRs (the `ipam.liqo.io` " +
			"Networks of namespace `liqo` labelled `ipam.liqo.io/network-type=pod-cidr` and `=external-cidr`, found by " +
			"label as upstream Liqo's tools do, whatever their names; those labelled `liqo.io/remote-cluster-id` are a " +
			"peer's, not the cluster's), the URL " +
			"of its API server and its Kubernetes version. Use it to feed one cluster's facts to the resources of " +
			"its peer (e.g. `liqo_tenant_namespace.remote_cluster_id`, the network configuration's CIDRs).",
		Attributes: map[string]schema.Attribute{
			"cluster": offloadingDataSourceClusterAttribute(),
			"cluster_id": dataSourceComputedString("The cluster's ID, from ConfigMap `liqo/liqo-clusterid-configmap` " +
				"(key `CLUSTER_ID`)."),
			"pod_cidrs": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "The cluster's pod CIDRs, all of them (upstream Liqo v1.2 lets a cluster have several): " +
					"the CIDR of each of its Networks of namespace `liqo` labelled `ipam.liqo.io/network-type=pod-cidr` (each " +
					"one's `status.cidr`, else its `spec.cidr`; upstream names them `pod-cidr-<cidr>`, e.g. " +
					"`pod-cidr-10-200-0-0-16`, one per pod CIDR), each CIDR once, in the Networks' name order (the order " +
					"upstream's tools list them in); an empty list when there is none yet."},
			"pod_cidr": dataSourceComputedString("**Deprecated**: use `pod_cidrs`, which lists all of the cluster's pod " +
				"CIDRs (a cluster may have several since Liqo v1.2). Kept for configurations written for one: the " +
				"cluster's pod CIDR when it has exactly one (the one element of `pod_cidrs`); null when it has none yet, " +
				"and null (not an error) when it has several."),
			"external_cidr": dataSourceComputedString("The cluster's external CIDR (the range its peers reach it through): " +
				"the Network of namespace `liqo` labelled `ipam.liqo.io/network-type=external-cidr` (its `status.cidr`, " +
				"else its `spec.cidr`); null when there is none yet, an error when there are several. The liqo controllers " +
				"default it to `10.70.0.0/16`, as upstream Liqo does."),
			"api_server_url":     dataSourceComputedString("URL of the API server the provider connects to for this cluster."),
			"kubernetes_version": dataSourceComputedString("Kubernetes version of the API server (e.g. `v1.31.0`)."),
		},
	}
}

// Read fills in the cluster's facts.
func (d *clusterDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	cfg, ok := modelOf[clusterDataSourceModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	if d.deferred(req, resp, cfg.Cluster) {
		return
	}
	c, err := d.client(ctx, cfg.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError("Reading cluster", err.Error())
		return
	}
	id, err := clusterid.Read(ctx, c.ctrl, c.liqoNS)
	if err != nil && !errors.Is(err, clusterid.ErrNotRecorded) {
		resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("%s: %v", c.describe(), err))
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("%s has no cluster ID (ConfigMap %s/%s, key %s): the liqo "+
			"controllers are not installed or have not started there; install them (or wait for them to start) and retry, "+
			"or set liqo_namespace to the namespace Liqo is installed in", c.describe(), c.liqoNS, consts.ClusterIDConfigMap, consts.ClusterIDKey))
		return
	}
	cfg.ClusterID = types.StringValue(string(id))

	nets, err := clusternet.ListIn(ctx, c.ctrl, c.liqoNS)
	if err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("%s has no ipam.liqo.io API: the liqo controllers are not "+
				"installed there; install them and retry", c.describe()))
			return
		}
		resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("%s: %v", c.describe(), err))
		return
	}
	pods := clusternet.PodCIDRs(nets)
	if len(pods) == 1 {
		cfg.PodCIDR = types.StringValue(pods[0])
	} else {
		cfg.PodCIDR = types.StringNull() // none, or several: pod_cidrs has them all
	}
	var diags diag.Diagnostics
	if cfg.PodCIDRs, diags = types.ListValueFrom(ctx, types.StringType, append([]string{}, pods...)); diags.HasError() {
		resp.Diagnostics.Append(diags...)
		return
	}
	ext, err := clusternet.ExternalCIDR(nets)
	if err != nil {
		resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("%s: %v", c.describe(), err))
		return
	}
	cfg.ExternalCIDR = stringOrNull(ext)

	cfg.APIServerURL = types.StringValue(c.host)
	ver, err := c.kube.Discovery().ServerVersion()
	if err != nil {
		resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("reading the version of %s: %v", c.describe(), err))
		return
	}
	cfg.KubernetesVersion = types.StringValue(ver.GitVersion)
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}
