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

// The pod CIDR Network's name as upstream v1.2's chart makes it: "pod-cidr-" and the CIDR with
// "/" and "." replaced by "-".
func TestPodCIDRNetworkName(t *testing.T) {
	for cidr, want := range map[string]string{"10.200.0.0/16": "pod-cidr-10-200-0-0-16", "192.168.1.0/24": "pod-cidr-192-168-1-0-24"} {
		if got := consts.PodCIDRNetworkName(cidr); got != want {
			t.Errorf("PodCIDRNetworkName(%s) = %s, want %s", cidr, got, want)
		}
	}
}

// A reflected object's origin: our labels, upstream's, or both when they agree; nothing when
// they disagree or only half of ours is there.
func TestReflectionOrigin(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{nil, ""},
		{map[string]string{consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: "a"}, "a"},
		{map[string]string{consts.OriginClusterIDLabel: "a"}, ""},
		{map[string]string{consts.UpstreamOriginLabel: "b"}, "b"},
		{map[string]string{consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: "a", consts.UpstreamOriginLabel: "a"}, "a"},
		{map[string]string{consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: "a", consts.UpstreamOriginLabel: "b"}, ""},
		{consts.ReflectionLabels("c", "p"), "c"},
	} {
		if got := consts.ReflectionOrigin(tc.labels); got != tc.want {
			t.Errorf("ReflectionOrigin(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}
