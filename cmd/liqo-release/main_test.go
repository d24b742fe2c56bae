package main

import (
	"bytes"
	"strings"
	"testing"

	productversion "github.com/peerkit/terraform-provider-liqo/internal/version"
)

// TestRunRefusesAnotherVersion: a release version other than the images' and the chart's is
// refused before anything is built, with a message naming both versions and the fix.
func TestRunRefusesAnotherVersion(t *testing.T) {
	out := t.TempDir()
	err := run(t.Context(), []string{"-version", "9.9.9", "-out", out, "-throwaway-key"}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("release 9.9.9 accepted, want a refusal: the images and the chart carry " + productversion.Version)
	}
	for _, want := range []string{"-version 9.9.9", productversion.Version, "internal/version.Version", "deploy/liqo/Chart.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %q: %v", want, err)
		}
	}
	if err := checkVersion(productversion.Version); err != nil {
		t.Errorf("the product's own version refused: %v", err)
	}
}
