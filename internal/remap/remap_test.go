package remap_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/remap"
)

func configuration(podSpec, podStatus, extSpec, extStatus []netv1beta1.CIDR) *netv1beta1.Configuration {
	c := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "peer"}}
	c.Spec.Remote.CIDR = netv1beta1.ClusterConfigCIDR{Pod: podSpec, External: extSpec}
	if podStatus != nil || extStatus != nil {
		c.Status.Remote = &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: podStatus, External: extStatus}}
	}
	return c
}

// TestFromConfigurationAndLocal: the pod CIDR remapped and the external one not; a remote pod's
// address keeps its host part under the remapped network; addresses outside every remapped
// network (or not IPv4) are unchanged.
func TestFromConfigurationAndLocal(t *testing.T) {
	c := configuration([]netv1beta1.CIDR{"10.232.0.0/16"}, []netv1beta1.CIDR{"10.71.0.0/16"},
		[]netv1beta1.CIDR{"10.70.0.0/16"}, nil)
	remaps, err := remap.FromConfiguration(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(remaps) != 2 || !remaps[0].Remapped() || remaps[1].Remapped() {
		t.Fatalf("remaps %+v: want the pod CIDR remapped, the external one not", remaps)
	}
	for ip, want := range map[string]string{
		"10.232.1.7":   "10.71.1.7",
		"10.232.255.1": "10.71.255.1",
		"10.70.0.9":    "10.70.0.9",
		"10.233.0.1":   "10.233.0.1",
		"fd00::1":      "fd00::1",
		"not an ip":    "not an ip",
	} {
		if got := remap.Local(ip, remaps); got != want {
			t.Errorf("Local(%s) = %s, want %s", ip, got, want)
		}
	}
	if got := remap.Local("10.232.1.7", nil); got != "10.232.1.7" {
		t.Errorf("Local without remaps = %s", got)
	}
}

// TestFromConfigurationBadInput: malformed or mismatched CIDRs are errors naming the
// Configuration and the value.
func TestFromConfigurationBadInput(t *testing.T) {
	for name, c := range map[string]*netv1beta1.Configuration{
		"bad spec":      configuration([]netv1beta1.CIDR{"10.232.0.0/33"}, nil, nil, nil),
		"bad status":    configuration([]netv1beta1.CIDR{"10.232.0.0/16"}, []netv1beta1.CIDR{"nope"}, nil, nil),
		"size mismatch": configuration([]netv1beta1.CIDR{"10.232.0.0/16"}, []netv1beta1.CIDR{"10.71.0.0/24"}, nil, nil),
	} {
		_, err := remap.FromConfiguration(c)
		if err == nil || !strings.Contains(err.Error(), "tenant/peer") {
			t.Errorf("%s: err %v, want an error naming tenant/peer", name, err)
		}
	}
	if r, err := remap.FromConfiguration(configuration(nil, nil, nil, nil)); err != nil || len(r) != 0 {
		t.Errorf("no CIDRs: %v, %v; want none, no error", r, err)
	}
}
