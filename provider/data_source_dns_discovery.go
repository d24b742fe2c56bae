package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/peerkit/terraform-provider-liqo/internal/dnsdiscovery"
)

var _ datasource.DataSource = (*dnsDiscoveryDataSource)(nil)

// dnsDiscoveryDataSource lists the clusters published in DNS under a domain (DNS discovery;
// manual discovery is liqo_cluster). It needs no cluster connection.
type dnsDiscoveryDataSource struct{}

type dnsDiscoveryDataSourceModel struct {
	Domain     types.String `tfsdk:"domain"`
	Service    types.String `tfsdk:"service"`
	Nameserver types.String `tfsdk:"nameserver"`
	Timeout    types.String `tfsdk:"timeout"`
	Clusters   types.List   `tfsdk:"clusters"`
}

// dnsDiscoveredCluster is one element of clusters.
type dnsDiscoveredCluster struct {
	Name         string                  `tfsdk:"name"`
	ClusterID    string                  `tfsdk:"cluster_id"`
	Host         string                  `tfsdk:"host"`
	Port         int64                   `tfsdk:"port"`
	APIServerURL string                  `tfsdk:"api_server_url"`
	Priority     int64                   `tfsdk:"priority"`
	Weight       int64                   `tfsdk:"weight"`
	TXT          map[string]string       `tfsdk:"txt"`
	Endpoints    []dnsDiscoveredEndpoint `tfsdk:"endpoints"`
}

// dnsDiscoveredEndpoint is one SRV record of a cluster.
type dnsDiscoveredEndpoint struct {
	Host         string `tfsdk:"host"`
	Port         int64  `tfsdk:"port"`
	APIServerURL string `tfsdk:"api_server_url"`
	Priority     int64  `tfsdk:"priority"`
	Weight       int64  `tfsdk:"weight"`
}

var (
	dnsEndpointType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"host": types.StringType, "port": types.Int64Type, "api_server_url": types.StringType,
		"priority": types.Int64Type, "weight": types.Int64Type,
	}}
	dnsClusterType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"name": types.StringType, "cluster_id": types.StringType, "host": types.StringType, "port": types.Int64Type,
		"api_server_url": types.StringType, "priority": types.Int64Type, "weight": types.Int64Type,
		"txt": types.MapType{ElemType: types.StringType}, "endpoints": types.ListType{ElemType: dnsEndpointType},
	}}
)

func newDNSDiscoveryDataSource() datasource.DataSource { return &dnsDiscoveryDataSource{} }

// Metadata names the data source liqo_dns_discovery.
func (d *dnsDiscoveryDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_dns_discovery"
}

// Schema describes liqo_dns_discovery.
func (d *dnsDiscoveryDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "DNS discovery: the clusters published in DNS under a domain, as DNS-based service " +
			"discovery ([RFC 6763](https://www.rfc-editor.org/rfc/rfc6763)) publishes services. PTR records at " +
			"`<service>.<domain>` (e.g. `_liqo._tcp.clusters.example.com`) name one instance per cluster, " +
			"`<instance>.<service>.<domain>`; each instance has an SRV record (the host and port of the cluster's " +
			"API server) and one TXT record of `key=value` strings, `cluster-id=<the cluster's ID>` among them " +
			"(other keys, e.g. `pod-cidr`, are kept in `txt`). It needs no cluster, so it can run in a provider " +
			"block of its own (an alias) whose results build the `clusters` map of the fleet's provider block, " +
			"with credentials from elsewhere: DNS says where clusters are, never how to log in. Manual " +
			"discovery is the `liqo_cluster` data source.\n\n" +
			"Nothing published under the domain (no PTR record, or no such name) gives an empty list and a " +
			"warning naming the name asked for. An instance whose SRV or TXT record is missing, whose SRV " +
			"record has port 0, or whose TXT record lacks `cluster-id` is an error naming the instance, the " +
			"record and the fix; an instance whose only SRV target is `.` (RFC 2782: not available there) is left " +
			"out with a warning. TXT keys are case-insensitive (kept in lower case); the first occurrence of a " +
			"key wins; a key without `=` has the empty value. The nameserver is asked directly (UDP, and TCP " +
			"for answers too long for UDP), following CNAME records; instance names may hold spaces, not dots.",
		Attributes: map[string]schema.Attribute{
			"domain": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The DNS domain the clusters are published under, e.g. `clusters.example.com` " +
					"(a trailing dot is allowed).",
				Validators: []validator.String{stringForm{"must be a DNS domain name such as clusters.example.com",
					"Invalid DNS domain", func(s string) string { return errDetail(dnsdiscovery.ValidateDomain(s)) }}},
			},
			"service": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The DNS-SD service type the clusters are published as: `_<name>._tcp` or " +
					"`_<name>._udp`. Default: `" + dnsdiscovery.DefaultService + "`.",
				Validators: []validator.String{stringForm{"must be a DNS-SD service type such as _liqo._tcp",
					"Invalid DNS-SD service type", func(s string) string { return errDetail(dnsdiscovery.ValidateService(s)) }}},
			},
			"nameserver": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The nameserver to ask, as `host:port` (e.g. `10.0.0.53:53`, `[fd00::53]:53`). " +
					"Default: the system's nameservers, those of `/etc/resolv.conf`, in turn.",
				Validators: []validator.String{stringForm{"must be host:port, e.g. 10.0.0.53:53", "Invalid nameserver",
					func(s string) string { return errDetail(dnsdiscovery.ValidateNameserver(s)) }}},
			},
			"timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "How long the whole discovery may take, as a duration (e.g. `10s`); a " +
					"nameserver that has not answered by then is an error. Default: `" +
					dnsdiscovery.DefaultTimeout.String() + "`.",
				Validators: []validator.String{timeoutValidator(0)},
			},
			"clusters": discoveredClustersAttribute("The clusters found, sorted by `name` (so plans stay quiet). `host`, `port`, "+
				"`api_server_url`, `priority` and `weight` are those of the preferred SRV record: the lowest "+
				"priority, then the highest weight (instead of RFC 2782's weighted random choice, so that "+
				"the choice is stable), then host and port; `endpoints` lists all of them in that order.",
				"The instance's name: the first label of its PTR record's target (e.g. `rome` for "+
					"`rome._liqo._tcp.clusters.example.com`), or the whole target when that is not under `<service>.<domain>`.",
				"Host of the cluster's API server: the preferred SRV record's target."),
		},
	}
}

// computedInt is a computed Int64 attribute.
func computedInt(description string) schema.Int64Attribute {
	return schema.Int64Attribute{Computed: true, MarkdownDescription: description}
}

// discoveredClustersAttribute is the clusters list of a discovery data source (DNS or LAN
// discovery, one shape so that either can build a fleet's clusters map), with the descriptions
// of the list, of name and of host.
func discoveredClustersAttribute(description, name, host string) schema.ListNestedAttribute {
	endpoint := map[string]schema.Attribute{
		"host":           dataSourceComputedString("The SRV record's target (without its trailing dot)."),
		"port":           computedInt("The SRV record's port."),
		"api_server_url": dataSourceComputedString("`https://<host>:<port>`."),
		"priority":       computedInt("The SRV record's priority (lower is preferred)."),
		"weight":         computedInt("The SRV record's weight (among equal priorities, higher is preferred)."),
	}
	return schema.ListNestedAttribute{
		Computed:            true,
		MarkdownDescription: description,
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name":           dataSourceComputedString(name),
			"cluster_id":     dataSourceComputedString("The cluster's ID: the TXT key `cluster-id`."),
			"host":           dataSourceComputedString(host),
			"port":           computedInt("Port of the cluster's API server: the preferred SRV record's port."),
			"api_server_url": dataSourceComputedString("`https://<host>:<port>`: a `host` for the provider's `clusters` map."),
			"priority":       computedInt("The preferred SRV record's priority."),
			"weight":         computedInt("The preferred SRV record's weight."),
			"txt": schema.MapAttribute{
				Computed: true, ElementType: types.StringType,
				MarkdownDescription: "The TXT record's keys (lower case) and values, `cluster-id` included.",
			},
			"endpoints": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Every SRV record of the instance, preferred first.",
				NestedObject:        schema.NestedAttributeObject{Attributes: endpoint},
			},
		}},
	}
}

// discoveredClustersList is the clusters list of a discovery data source for the clusters found.
func discoveredClustersList(ctx context.Context, found []dnsdiscovery.Cluster, diags *diag.Diagnostics) types.List {
	clusters := make([]dnsDiscoveredCluster, 0, len(found))
	for _, c := range found {
		out := dnsDiscoveredCluster{Name: c.Name, ClusterID: c.ClusterID, TXT: c.TXT}
		for _, e := range c.Endpoints {
			out.Endpoints = append(out.Endpoints, dnsDiscoveredEndpoint{
				Host: e.Host, Port: int64(e.Port), APIServerURL: e.URL(), Priority: int64(e.Priority), Weight: int64(e.Weight),
			})
		}
		if len(out.Endpoints) == 0 { // discoveries keep only clusters with an endpoint
			diags.AddError("Discovering clusters", fmt.Sprintf("instance %q has no usable SRV record", c.Name))
			return types.ListNull(dnsClusterType)
		}
		best := out.Endpoints[0]
		out.Host, out.Port, out.APIServerURL, out.Priority, out.Weight = best.Host, best.Port, best.APIServerURL, best.Priority, best.Weight
		clusters = append(clusters, out)
	}
	list, d := types.ListValueFrom(ctx, dnsClusterType, clusters)
	diags.Append(d...)
	return list
}

// errDetail is a validator's detail for err: "" when nil.
func errDetail(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// timeoutValidator checks a positive duration, at most max (0: no bound).
func timeoutValidator(maxTimeout time.Duration) validator.String {
	desc := "must be a positive duration such as 5s"
	if maxTimeout > 0 {
		desc += ", at most " + maxTimeout.String()
	}
	return stringForm{desc, "Invalid timeout", func(s string) string {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return fmt.Sprintf("%q is not a duration such as 5s or 1m: %v", s, err)
		case d <= 0:
			return fmt.Sprintf("%q is not positive: give the discovery some time, e.g. 5s", s)
		case maxTimeout > 0 && d > maxTimeout:
			return fmt.Sprintf("%q is more than %s: the discovery would hold the plan that long", s, maxTimeout)
		}
		return ""
	}}
}

// Read looks the clusters up.
func (d *dnsDiscoveryDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	cfg, ok := modelOf[dnsDiscoveryDataSourceModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	opts := dnsdiscovery.Options{Domain: cfg.Domain.ValueString(), Service: cfg.Service.ValueString()}
	if ns := cfg.Nameserver.ValueString(); ns != "" {
		opts.Nameservers = []string{ns}
	}
	if t := cfg.Timeout.ValueString(); t != "" {
		var err error
		if opts.Timeout, err = time.ParseDuration(t); err != nil { // the validator has checked it
			resp.Diagnostics.AddError("Invalid timeout", err.Error())
			return
		}
	}
	res, err := dnsdiscovery.Lookup(ctx, opts)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Discovering clusters under %s", opts.Domain), err.Error())
		return
	}
	for _, w := range res.Warnings {
		resp.Diagnostics.AddWarning(fmt.Sprintf("DNS discovery under %s", opts.Domain), w)
	}
	if len(res.Clusters) == 0 {
		said := "has no PTR record there"
		if res.NotFound {
			said = "says that name does not exist (NXDOMAIN)"
		}
		resp.Diagnostics.AddWarning(fmt.Sprintf("No clusters published under %s", opts.Domain), fmt.Sprintf(
			"Asked for the PTR records of %s: nameserver %s %s. Publish one per cluster (`%s PTR <instance>.%s`, with "+
				"its SRV and TXT records), or check domain and service.",
			res.ServiceName, res.Nameserver, said, res.ServiceName, res.ServiceName))
	}
	list := discoveredClustersList(ctx, res.Clusters, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	cfg.Clusters = list
	resp.Diagnostics.Append(resp.State.Set(ctx, &cfg)...)
}
