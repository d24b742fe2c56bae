package provider_test

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/peerkit/terraform-provider-liqo/provider"
)

// TestPeeringStateWithLatencyUpgrades: state written when liqo_peering's status held the
// tunnel latency (before it was dropped as a volatile value) still loads: the framework's
// upgrade drops the attribute and keeps the rest.
func TestPeeringStateWithLatencyUpgrades(t *testing.T) {
	server, err := providerserver.NewProtocol6WithError(provider.New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]any{
		"id": "consumer/provider", "consumer_cluster": "consumer", "provider_cluster": "provider",
		"status": map[string]any{"networking": "Established", "authentication": "Established", "offloading": "Ready", "latency": "1.738ms"},
	}
	raw, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := server.UpgradeResourceState(t.Context(), &tfprotov6.UpgradeResourceStateRequest{
		TypeName: "liqo_peering", Version: 0, RawState: &tfprotov6.RawState{JSON: raw},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Errorf("upgrade diagnostic: %s: %s", d.Summary, d.Detail)
	}
	if resp.UpgradedState == nil {
		t.Fatal("no upgraded state")
	}
	schemas, err := server.GetProviderSchema(t.Context(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	typ := schemas.ResourceSchemas["liqo_peering"].ValueType()
	v, err := resp.UpgradedState.Unmarshal(typ)
	if err != nil {
		t.Fatal(err)
	}
	var attrs map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		t.Fatal(err)
	}
	var status map[string]tftypes.Value
	if err := attrs["status"].As(&status); err != nil {
		t.Fatal(err)
	}
	if _, ok := status["latency"]; ok {
		t.Errorf("the upgraded status still has latency: %v", status)
	}
	var networking, id string
	if err := status["networking"].As(&networking); err != nil || networking != "Established" {
		t.Errorf("status.networking after the upgrade: %q, %v; want Established", networking, err)
	}
	if err := attrs["id"].As(&id); err != nil || id != "consumer/provider" {
		t.Errorf("id after the upgrade: %q, %v", id, err)
	}
}
