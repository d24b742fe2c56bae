package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/peerkit/terraform-provider-liqo/internal/landiscovery"
)

var _ datasource.DataSource = (*lanDiscoveryDataSource)(nil)

// lanDiscoveryDataSource lists the clusters announced over multicast DNS on the link (LAN
// discovery; DNS discovery is liqo_dns_discovery, manual discovery liqo_cluster). It needs no
// cluster connection.
type lanDiscoveryDataSource struct{}

type lanDiscoveryDataSourceModel struct {
	Interface types.String `tfsdk:"interface"`
	Timeout   types.String `tfsdk:"timeout"`
	Clusters  types.List   `tfsdk:"clusters"`
}

func newLANDiscoveryDataSource() datasource.DataSource { return &lanDiscoveryDataSource{} }

// Metadata names the data source liqo_lan_discovery.
func (d *lanDiscoveryDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_lan_discovery"
}

// Schema describes liqo_lan_discovery.
func (d *lanDiscoveryDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "LAN discovery: the clusters announced on the local link over multicast DNS " +
			"([RFC 6762](https://www.rfc-editor.org/rfc/rfc6762)) as the DNS-SD service `_liqo._tcp.local.`, as " +
			"a Liqo controller manager started with `--lan-discovery` (chart value `lanDiscovery.enabled`) " +
			"announces its cluster: an SRV record (the host and port of the cluster's API server), and a TXT " +
			"record with `cluster-id`, `version` and `shares`. It asks once (again after a second), listens for " +
			"`timeout`, and lists the clusters whose announcement came complete; `clusters` has the shape of " +
			"`liqo_dns_discovery`'s, so either can build the `clusters` map of the fleet's provider block (with " +
			"credentials from elsewhere: an announcement says where a cluster is, never how to log in). It needs " +
			"no cluster.\n\n" +
			"An announcement whose TXT record lacks `cluster-id`, has an invalid one or a key that is not " +
			"printable text, or is larger than 1300 bytes, is left out with a warning (and a log line), as is a " +
			"packet that does not parse; one withdrawn while listening (a goodbye, TTL 0) is left out. Nothing announced gives an empty list and a " +
			"warning. Multicast stays on one link: run Terraform on the clusters' network. IPv4 only.",
		Attributes: map[string]schema.Attribute{
			"interface": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The network interface to browse on, e.g. `eth0`. Default: the system's " +
					"default multicast interface (the one of the default route).",
				Validators: []validator.String{stringForm{"must be a network interface name such as eth0",
					"Invalid network interface", func(s string) string { return errDetail(landiscovery.ValidateInterface(s)) }}},
			},
			"timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "How long to listen for announcements, as a duration (e.g. `5s`), at most `" +
					landiscovery.MaxTimeout.String() + "`. Default: `" + landiscovery.DefaultTimeout.String() + "`.",
				Validators: []validator.String{timeoutValidator(landiscovery.MaxTimeout)},
			},
			"clusters": discoveredClustersAttribute("The clusters found, sorted by `name` (so plans stay quiet); "+
				"one endpoint each, its SRV record.",
				"The instance's name: the first label of its PTR record's target (the announcer names it after "+
					"the cluster ID, e.g. `cl-rome` for `cl-rome._liqo._tcp.local`).",
				"Host of the cluster's API server: the SRV record's target, or its address when the target is "+
					"a `.local` name (which only multicast DNS resolves)."),
		},
	}
}

// Read browses the link.
func (d *lanDiscoveryDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	cfg, ok := modelOf[lanDiscoveryDataSourceModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	opts := landiscovery.BrowseOptions{Interface: cfg.Interface.ValueString(), Log: funcr.New(func(prefix, args string) {
		tflog.Warn(ctx, prefix+" "+args)
	}, funcr.Options{})}
	if t := cfg.Timeout.ValueString(); t != "" {
		var err error
		if opts.Timeout, err = time.ParseDuration(t); err != nil { // the validator has checked it
			resp.Diagnostics.AddError("Invalid timeout", err.Error())
			return
		}
	}
	if opts.Timeout == 0 {
		opts.Timeout = landiscovery.DefaultTimeout
	}
	where := "the default multicast interface"
	if opts.Interface != "" {
		where = "interface " + opts.Interface
	}
	res, err := landiscovery.Browse(ctx, opts)
	if err != nil {
		resp.Diagnostics.AddError("Discovering clusters on "+where, err.Error())
		return
	}
	for _, w := range res.Warnings {
		resp.Diagnostics.AddWarning("LAN discovery on "+where, w)
	}
	if len(res.Clusters) == 0 {
		resp.Diagnostics.AddWarning("No clusters announced on "+where, fmt.Sprintf("Asked for %s over multicast DNS and "+
			"listened %s: nothing answered. Start the clusters' controller managers with --lan-discovery (chart value "+
			"lanDiscovery.enabled=true) on this link, check the interface, or raise timeout.", res.ServiceName, opts.Timeout))
	}
	cfg.Clusters = discoveredClustersList(ctx, res.Clusters, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}
