package testenv

import "testing"

// The uplinks are consecutive /30s of 10.253.0.0/16: host side first, node second.
func TestLinkAddrs(t *testing.T) {
	for _, tc := range []struct {
		k                  int
		subnet, host, node string
	}{
		{0, "10.253.0.0/30", "10.253.0.1", "10.253.0.2"},
		{1, "10.253.0.4/30", "10.253.0.5", "10.253.0.6"},
		{64, "10.253.1.0/30", "10.253.1.1", "10.253.1.2"},
		{maxRealNodes - 1, "10.253.3.252/30", "10.253.3.253", "10.253.3.254"},
	} {
		subnet, host, node := linkAddrs(tc.k)
		if subnet != tc.subnet || host != tc.host || node != tc.node {
			t.Errorf("linkAddrs(%d) = %s %s %s, want %s %s %s", tc.k, subnet, host, node, tc.subnet, tc.host, tc.node)
		}
	}
}

// Mount points in /proc/self/mountinfo escape spaces and the like in octal.
func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a/b`: "/a/b", `/a\040b`: "/a b", `/x\134y`: `/x\y`, `/trail\04`: `/trail\04`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
