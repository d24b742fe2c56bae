package testenv_test

import (
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// showJSON is `terraform show -json` of a state with a peering in the root module, one in a
// child module and a data source (which no import names).
const showJSON = `{"values":{"root_module":{
  "resources":[
    {"address":"liqo_peering.this","mode":"managed","values":{"id":"consumer/provider"},
     "identity":{"consumer_cluster":"consumer","provider_cluster":"provider"}},
    {"address":"data.liqo_cluster.c","mode":"data","values":{"id":"c"}}],
  "child_modules":[{"resources":[
    {"address":"module.m.liqo_peering.p","mode":"managed","values":{"id":"a/b"},
     "identity":{"consumer_cluster":"a","provider_cluster":"b"}}]}]}}}`

func TestImportBlocks(t *testing.T) {
	byID, n, err := testenv.ImportBlocks([]byte(showJSON), false)
	if err != nil || n != 2 {
		t.Fatalf("by ID: %d blocks, %v; want 2", n, err)
	}
	for _, want := range []string{"to = liqo_peering.this\n  id = \"consumer/provider\"", "to = module.m.liqo_peering.p\n  id = \"a/b\""} {
		if !strings.Contains(byID, want) {
			t.Errorf("by ID: no %q in\n%s", want, byID)
		}
	}
	byIdentity, n, err := testenv.ImportBlocks([]byte(showJSON), true)
	if err != nil || n != 2 {
		t.Fatalf("by identity: %d blocks, %v; want 2", n, err)
	}
	want := "import {\n  to = liqo_peering.this\n  identity = {\n    consumer_cluster = \"consumer\"\n    provider_cluster = \"provider\"\n  }\n}\n"
	if !strings.Contains(byIdentity, want) || strings.Contains(byIdentity, "id =") {
		t.Errorf("by identity: want %q and no id in\n%s", want, byIdentity)
	}
	noIdentity := strings.ReplaceAll(showJSON, `"identity"`, `"other"`)
	if _, _, err := testenv.ImportBlocks([]byte(noIdentity), true); err == nil || !strings.Contains(err.Error(), "liqo_peering.this has no identity") {
		t.Errorf("a resource without identity: %v, want an error naming it", err)
	}
}
