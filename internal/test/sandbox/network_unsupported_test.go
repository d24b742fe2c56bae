package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNetworkUnsupported: each reason the gateways cannot run is named, so that the sandbox
// can say why it disables networking; with root and a gateway binary there is none.
func TestNetworkUnsupported(t *testing.T) {
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("/dev/net/tun is missing here: every case would name it")
	}
	bin := filepath.Join(t.TempDir(), "liqo-gateway")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		euid       int
		gatewayBin string
		want       string // a part of the reason; "" for none
	}{
		{"not root", 1000, bin, "not root"},
		{"no binary given", 0, "", "no gateway binary given"},
		{"binary missing", 0, bin + "-gone", "is missing (make sandbox builds it)"},
		{"root with a binary", 0, bin, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := networkUnsupported(tc.euid, tc.gatewayBin)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("networkUnsupported(%d, %q) = %q, want %q", tc.euid, tc.gatewayBin, got, tc.want)
			}
		})
	}
}
