package consts_test

import (
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Either our peer-gone annotation or upstream Liqo's says a peer is gone; only "true" counts.
func TestPeerGone(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        bool
	}{
		{nil, false},
		{map[string]string{consts.PeerGoneAnnotation: "true"}, true},
		{map[string]string{consts.PeerGoneUpstreamAnnotation: "true"}, true},
		{map[string]string{consts.PeerGoneAnnotation: "false", consts.PeerGoneUpstreamAnnotation: "yes"}, false},
	} {
		if got := consts.PeerGone(tc.annotations); got != tc.want {
			t.Errorf("PeerGone(%v) = %t, want %t", tc.annotations, got, tc.want)
		}
	}
}
