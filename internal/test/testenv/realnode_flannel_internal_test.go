package testenv

import (
	"errors"
	"strings"
	"testing"
)

// TestFlannelFor: one node defaults to the bridge, more to flannel (which needs its binaries),
// the bridge cannot join several nodes, and an unknown CNI is refused by name.
func TestFlannelFor(t *testing.T) {
	t.Setenv(FlannelBinDirEnv, "")
	for _, tc := range []struct {
		cni     string
		count   int
		wantErr string // "" for the bridge
	}{
		{"", 1, ""},
		{CNIBridge, 1, ""},
		{"", 2, "LIQO_FLANNEL_BIN is not set"},
		{CNIFlannel, 1, "LIQO_FLANNEL_BIN is not set"},
		{CNIBridge, 2, `CNI "bridge" with 2 nodes`},
		{"calico", 1, `unknown CNI "calico"`},
	} {
		dir, err := flannelFor(tc.cni, tc.count)
		if tc.wantErr == "" {
			if err != nil || dir != "" {
				t.Errorf("flannelFor(%q, %d) = %q, %v; want the bridge", tc.cni, tc.count, dir, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("flannelFor(%q, %d) = %q, %v; want an error with %q", tc.cni, tc.count, dir, err, tc.wantErr)
		}
		if strings.Contains(tc.wantErr, "LIQO_FLANNEL_BIN") && !errors.Is(err, ErrRealNodeUnavailable) {
			t.Errorf("flannelFor(%q, %d): %v does not wrap ErrRealNodeUnavailable", tc.cni, tc.count, err)
		}
	}
}
