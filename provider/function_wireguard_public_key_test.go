package provider

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

// The key pair of seed 003's consumer fixture (internal/api/crds/testdata/seed003/consumer.yaml).
const (
	fnSeedPrivateKey = "YFnVJbOhOlRaqDEyg7yOSo5fKPbCQ9RYXuIdYjyGLmo="
	fnSeedPublicKey  = "PcoRfoRt4C0tBDowW2H6PoYvAu0z/in7el/5EHaBLQo="
)

// runWireguardPublicKey calls the function as the framework does, through RunRequest/RunResponse.
func runWireguardPublicKey(arg attr.Value) *function.RunResponse {
	resp := &function.RunResponse{Result: function.NewResultData(types.StringUnknown())}
	(&wireguardPublicKeyFunction{}).Run(context.Background(), function.RunRequest{
		Arguments: function.NewArgumentsData([]attr.Value{arg}),
	}, resp)
	return resp
}

func TestWireguardPublicKeyFunction(t *testing.T) {
	resp := runWireguardPublicKey(types.StringValue(fnSeedPrivateKey))
	if resp.Error != nil {
		t.Fatalf("error: %v", resp.Error)
	}
	want := function.NewResultData(types.StringValue(fnSeedPublicKey))
	if !resp.Result.Equal(want) {
		t.Fatalf("result %v, want %v", resp.Result.Value(), want.Value())
	}

	for name, bad := range map[string]string{
		"not base64": "not base64!",
		"31 bytes":   "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
		"empty":      "",
	} {
		t.Run(name, func(t *testing.T) {
			resp := runWireguardPublicKey(types.StringValue(bad))
			if resp.Error == nil {
				t.Fatal("no error")
			}
			if resp.Error.FunctionArgument == nil || *resp.Error.FunctionArgument != 0 {
				t.Errorf("error not attached to argument 0: %+v", resp.Error)
			}
			if !strings.Contains(resp.Error.Text, "not a WireGuard private key") {
				t.Errorf("error text %q", resp.Error.Text)
			}
			if bad != "" && strings.Contains(resp.Error.Text, bad) {
				t.Errorf("error repeats the argument: %q", resp.Error.Text)
			}
		})
	}
}

// TestAccFunctionWireguardPublicKey calls the function from a configuration, through terraform.
func TestAccFunctionWireguardPublicKey(t *testing.T) {
	factories := map[string]func() (tfprotov6.ProviderServer, error){
		"liqo": providerserver.NewProtocol6WithError(New("test")()),
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		Steps: []resource.TestStep{
			{
				Config: `output "public_key" { value = provider::liqo::wireguard_public_key("` + fnSeedPrivateKey + `") }`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("public_key", knownvalue.StringExact(fnSeedPublicKey)),
				},
			},
			{
				Config:      `output "public_key" { value = provider::liqo::wireguard_public_key("bm90LWEta2V5") }`,
				ExpectError: regexp.MustCompile(`(?s)private_key is not a WireGuard\s+private key: decodes to 9 bytes`),
			},
		},
	})
}
