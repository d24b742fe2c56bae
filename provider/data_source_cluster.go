package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
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
			"Networks of namespace `liqo` labelled `ipam.liqo.io/network-type=pod-cidr` and `=external-cidr`), the URL " +
			"of its API server and its Kubernetes version. Use it to feed one cluster's facts to the resources of " +
			"its peer (e.g. `liqo_tenant_namespace.remote_cluster_id`, the network configuration's CIDRs).",
		Attributes: map[string]schema.Attribute{
			"cluster": offloadingDataSourceClusterAttribute(),
			"cluster_id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The cluster's ID, from ConfigMap `liqo/liqo-clusterid-configmap` (key `CLUSTER_ID`).",
			},
			"pod_cidr": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The cluster's pod CIDR: the Network of namespace `liqo` labelled " +
					"`ipam.liqo.io/network-type=pod-cidr` (its `status.cidr`, else its `spec.cidr`); null when there is none yet.",
			},
			"external_cidr": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The cluster's external CIDR (the range its peers reach it through): the Network of namespace " +
					"`liqo` labelled `ipam.liqo.io/network-type=external-cidr` (its `status.cidr`, else its `spec.cidr`); " +
					"null when there is none yet.",
			},
			"api_server_url": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "URL of the API server the provider connects to for this cluster.",
			},
			"kubernetes_version": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Kubernetes version of the API server (e.g. `v1.31.0`).",
			},
		},
	}
}

// Read fills in the cluster's facts.
func (d *clusterDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var cfg clusterDataSourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := d.client(ctx, cfg.Cluster, false)
	if err != nil {
		resp.Diagnostics.AddError("Reading cluster", err.Error())
		return
	}
	cm := &corev1.ConfigMap{}
	err = c.ctrl.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ClusterIDConfigMap}, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("reading ConfigMap %s/%s in %s: %v",
			consts.LiqoNamespace, consts.ClusterIDConfigMap, c.describe(), err))
		return
	}
	if err != nil || cm.Data[consts.ClusterIDKey] == "" {
		resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("%s has no cluster ID (ConfigMap %s/%s, key %s): the liqo "+
			"controllers are not installed or have not started there; install them (or wait for them to start) and retry",
			c.describe(), consts.LiqoNamespace, consts.ClusterIDConfigMap, consts.ClusterIDKey))
		return
	}
	cfg.ClusterID = types.StringValue(cm.Data[consts.ClusterIDKey])

	nets := &ipamv1alpha1.NetworkList{}
	if err := c.ctrl.List(ctx, nets, client.InNamespace(consts.LiqoNamespace), client.HasLabels{consts.NetworkTypeLabel}); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("%s has no ipam.liqo.io API: the liqo controllers are not "+
				"installed there; install them and retry", c.describe()))
			return
		}
		resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("listing the Networks of namespace %s in %s: %v", consts.LiqoNamespace, c.describe(), err))
		return
	}
	for _, n := range []struct {
		typ string
		dst *types.String
	}{{consts.PodCIDRNetwork, &cfg.PodCIDR}, {consts.ExternalCIDRNetwork, &cfg.ExternalCIDR}} {
		v, err := clusterNetworkCIDR(nets.Items, n.typ)
		if err != nil {
			resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("%s: %v", c.describe(), err))
			return
		}
		*n.dst = v
	}

	cfg.APIServerURL = types.StringValue(c.host)
	ver, err := c.kube.Discovery().ServerVersion()
	if err != nil {
		resp.Diagnostics.AddError("Reading cluster", fmt.Sprintf("reading the version of %s: %v", c.describe(), err))
		return
	}
	cfg.KubernetesVersion = types.StringValue(ver.GitVersion)
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}

// clusterNetworkCIDR picks the cluster's own Network of a type: labelled with the type, not a
// peer's (no remote-cluster-id label); if several, the one named after the type.
func clusterNetworkCIDR(items []ipamv1alpha1.Network, typ string) (types.String, error) {
	var found []ipamv1alpha1.Network
	for _, n := range items {
		if n.Labels[consts.NetworkTypeLabel] == typ && n.Labels[consts.RemoteClusterIDLabel] == "" {
			found = append(found, n)
		}
	}
	if len(found) > 1 {
		for _, n := range found {
			if n.Name == typ {
				found = []ipamv1alpha1.Network{n}
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return types.StringNull(), nil
	case 1:
		if found[0].Status.CIDR != "" {
			return types.StringValue(string(found[0].Status.CIDR)), nil
		}
		return stringOrNull(string(found[0].Spec.CIDR)), nil
	}
	names := make([]string, len(found))
	for i, n := range found {
		names[i] = n.Name
	}
	sort.Strings(names)
	return types.StringNull(), fmt.Errorf("several Networks in namespace %s are labelled %s=%s (%s) and none is named %s: "+
		"keep one, or name the cluster's own %s", consts.LiqoNamespace, consts.NetworkTypeLabel, typ, strings.Join(names, ", "), typ, typ)
}
