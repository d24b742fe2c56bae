package sandbox

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestExtraPodCIDRs: the flag's cluster=cidr values, written back for the supervisor in a
// stable order; the controller manager gets each as a further --pod-cidr after the cluster's
// own (none by default: the flags as before); the stand-in pod's address in each is its .10;
// bad values are refused, naming the flag and the fix.
func TestExtraPodCIDRs(t *testing.T) {
	extra := map[string][]string{}
	for _, v := range []string{"provider=10.70.0.0/16", "consumer=10.210.0.0/16", "provider=10.211.0.0/24"} {
		if err := ParseExtraPodCIDR(extra, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := ParseExtraPodCIDR(extra, "10.70.0.0/16"); err == nil || !strings.Contains(err.Error(), "want cluster=cidr") {
		t.Errorf("a value without cluster: %v", err)
	}
	s := &Sandbox{ExtraPodCIDRs: extra}
	if got, want := s.ExtraPodCIDRArgs(), []string{"-extra-pod-cidr", "consumer=10.210.0.0/16", "-extra-pod-cidr", "provider=10.70.0.0/16",
		"-extra-pod-cidr", "provider=10.211.0.0/24"}; !slices.Equal(got, want) {
		t.Errorf("ExtraPodCIDRArgs = %q, want %q", got, want)
	}
	if err := s.ValidateExtraPodCIDRs(NodesKWOK); err != nil {
		t.Errorf("valid further pod CIDRs refused: %v", err)
	}

	c := &testenv.Cluster{Name: "provider", KubeconfigPath: "/k", Config: &rest.Config{Host: "https://127.0.0.1:1"}}
	o, err := clusterOptions("provider")
	if err != nil {
		t.Fatal(err)
	}
	pods := func(args []string) []string {
		var out []string
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--pod-cidr="); ok {
				out = append(out, v)
			}
		}
		return out
	}
	if got := pods(managerArgs(c, o, extra["provider"], "p", "w")); !slices.Equal(got, []string{"10.201.0.0/16", "10.70.0.0/16", "10.211.0.0/24"}) {
		t.Errorf("the manager's pod CIDRs %q, want its own, then the further ones", got)
	}
	if got := pods(managerArgs(c, o, nil, "p", "w")); !slices.Equal(got, []string{"10.201.0.0/16"}) {
		t.Errorf("the manager's pod CIDRs by default %q, want its own only", got)
	}
	if got := StandInAddress("10.70.0.0/16"); got != "10.70.0.10" {
		t.Errorf("StandInAddress(10.70.0.0/16) = %q, want 10.70.0.10", got)
	}
	if got := StandInAddress("not a CIDR"); got != "" {
		t.Errorf("StandInAddress of a bad CIDR = %q, want empty", got)
	}

	for _, tc := range []struct {
		extra map[string][]string
		nodes string
		want  string
	}{
		{map[string][]string{"provider-2": {"10.70.0.0/16"}}, NodesKWOK, "no such cluster in this sandbox (consumer, provider)"},
		{map[string][]string{"provider": {"10.201.128.0/17"}}, NodesKWOK, "overlaps the cluster's pod CIDR 10.201.0.0/16"},
		{map[string][]string{"provider": {"10.70.0.0/16", "10.70.1.0/24"}}, NodesKWOK, "overlaps the cluster's pod CIDR 10.70.0.0/16"},
		{map[string][]string{"provider": {"10.70.0.1/16"}}, NodesKWOK, "not an IPv4 network CIDR of /28 or larger"},
		{map[string][]string{"provider": {"10.70.0.0/30"}}, NodesKWOK, "not an IPv4 network CIDR of /28 or larger"},
		{map[string][]string{"provider": {"10.70.0.0/16"}}, NodesReal, "KWOK nodes only"},
	} {
		if err := (&Sandbox{ExtraPodCIDRs: tc.extra}).ValidateExtraPodCIDRs(tc.nodes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidateExtraPodCIDRs(%v, %s) = %v, want an error containing %q", tc.extra, tc.nodes, err, tc.want)
		}
	}
}
