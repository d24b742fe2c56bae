package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// readDNSDiscovery runs liqo_dns_discovery's Read on cfg, as Terraform would, and returns the
// state and the diagnostics (Terraform shows warnings, which the acceptance tests cannot see).
func readDNSDiscovery(t *testing.T, cfg dnsDiscoveryDataSourceModel) (dnsDiscoveryDataSourceModel, diag.Diagnostics) {
	t.Helper()
	ctx := context.Background()
	d := newDNSDiscoveryDataSource()
	var sch datasource.SchemaResponse
	d.Schema(ctx, datasource.SchemaRequest{}, &sch)
	null := tftypes.NewValue(sch.Schema.Type().TerraformType(ctx), nil)
	raw := tfsdk.State{Schema: sch.Schema, Raw: null}
	cfg.Clusters = types.ListNull(dnsClusterType)
	if diags := raw.Set(ctx, &cfg); diags.HasError() {
		t.Fatal(diags)
	}
	resp := datasource.ReadResponse{State: tfsdk.State{Schema: sch.Schema, Raw: null}}
	d.Read(ctx, datasource.ReadRequest{Config: tfsdk.Config{Schema: sch.Schema, Raw: raw.Raw}}, &resp)
	var out dnsDiscoveryDataSourceModel
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.State.Get(ctx, &out)...)
	}
	return out, resp.Diagnostics
}

// wantWarning fails unless diags hold no error and a warning with summary and every part.
func wantWarning(t *testing.T, diags diag.Diagnostics, summary string, parts ...string) {
	t.Helper()
	if diags.HasError() {
		t.Fatalf("errors: %v", diags.Errors())
	}
	for _, w := range diags.Warnings() {
		if w.Summary() != summary {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(w.Detail(), p) {
				t.Errorf("warning %q: detail %q lacks %q", summary, w.Detail(), p)
			}
		}
		return
	}
	t.Errorf("no warning %q among %v", summary, diags.Warnings())
}

func TestDNSDiscoveryWarnings(t *testing.T) {
	s := testenv.NewDNSServer(t)
	cfg := dnsDiscoveryDataSourceModel{Domain: types.StringValue("clusters.example.com"), Nameserver: types.StringValue(s.Addr)}

	// Nothing under the domain: an empty list, and a warning naming the name asked for.
	out, diags := readDNSDiscovery(t, cfg)
	wantWarning(t, diags, "No clusters published under clusters.example.com",
		"Asked for the PTR records of _liqo._tcp.clusters.example.com.: nameserver "+s.Addr+
			" says that name does not exist (NXDOMAIN).",
		"`_liqo._tcp.clusters.example.com. PTR <instance>._liqo._tcp.clusters.example.com.`", "check domain and service")
	if out.Clusters.IsNull() || len(out.Clusters.Elements()) != 0 {
		t.Errorf("clusters: %v, want an empty list", out.Clusters)
	}
	s.AddTXT("_liqo._tcp.clusters.example.com", "nothing here")
	_, diags = readDNSDiscovery(t, cfg)
	wantWarning(t, diags, "No clusters published under clusters.example.com", "has no PTR record there")

	// An instance that says it is not available is left out, with a warning; no empty-list warning.
	inst := "gone._liqo._tcp.clusters.example.com"
	s.AddPTR("_liqo._tcp.clusters.example.com", inst)
	s.AddSRV(inst, 0, 0, 0, ".")
	s.AddTXT(inst, "cluster-id=cl-gone")
	inst = "here._liqo._tcp.clusters.example.com"
	s.AddPTR("_liqo._tcp.clusters.example.com", inst)
	s.AddSRV(inst, 0, 0, 6443, "api.here.example.com")
	s.AddTXT(inst, "cluster-id=cl-here")
	out, diags = readDNSDiscovery(t, cfg)
	wantWarning(t, diags, "DNS discovery under clusters.example.com", `instance "gone"`, "left out", `target is "."`)
	if len(diags.Warnings()) != 1 || len(out.Clusters.Elements()) != 1 {
		t.Errorf("warnings %v, clusters %v", diags.Warnings(), out.Clusters)
	}
}
