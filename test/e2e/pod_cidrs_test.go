package e2e

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/clusternet"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/nsping"
	"github.com/peerkit/terraform-provider-liqo/internal/remap"
	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
)

// secondPodCIDR is the provider's second pod CIDR in TestSecondPodCIDR: the consumer's external
// CIDR, so that the consumer must remap it (and the provider the consumer's external CIDR).
const secondPodCIDR = "10.70.0.0/16"

// routeDevice is the device the named cluster's gateway host routes address through, or what
// ip says when it has no route there.
func routeDevice(cluster, address string) string {
	out, err := exec.Command("ip", "-n", sandbox.HostNetns(cluster), "-o", "route", "get", address).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("none (%v: %s)", err, bytes.TrimSpace(out))
	}
	f := strings.Fields(string(out))
	if i := slices.Index(f, "dev"); i >= 0 && i+1 < len(f) {
		return f[i+1]
	}
	return ""
}

// TestSecondPodCIDR: the provider has a second pod CIDR (Liqo v1.2's podCIDRs; the sandbox's
// -extra-pod-cidr), 10.70.0.0/16, which is also the consumer's external CIDR. Its controller
// manager records a Network for each pod CIDR. After examples/peering, the consumer's
// Configuration of the provider lists both pod CIDRs and remaps the second one; where the
// sandbox runs gateways (root), the consumer's stand-in pod reaches the provider's stand-in pod
// at its address in the second pod CIDR (10.70.0.10), under its remapped address, through the
// tunnel (the only route there is): ping and HTTP, answered by the provider's stand-in pod at its
// real address to the consumer pod's own. Pod traffic at the first pod CIDR still flows both
// ways; after destroy, nothing is left and the address is unreachable.
func TestSecondPodCIDR(t *testing.T) {
	r := startSandbox(t, 2, "-"+sandbox.ExtraPodCIDRFlag, "provider="+secondPodCIDR)
	ctx := t.Context()
	target := sandbox.StandInAddress(secondPodCIDR) // 10.70.0.10
	mapped := ""                                    // where the consumer reaches it

	nets, err := clusternet.Read(ctx, r.clients["provider"])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.201.0.0/16", secondPodCIDR}; !slices.Equal(nets.PodCIDRs, want) {
		t.Fatalf("the provider's pod CIDRs, read from its Networks: %v, want %v", nets.PodCIDRs, want)
	}
	if r.networking {
		if _, err := nsping.Ping(sandbox.PodNetns("consumer"), target, 1); err == nil {
			t.Errorf("before peering, the consumer's pod reaches %s", target)
		}
	}

	args := r.tfArgs("peering", "consumer_kubeconfig="+filepath.Join(r.state, "consumer.kubeconfig"),
		"provider_kubeconfig="+filepath.Join(r.state, "provider.kubeconfig"))
	r.mustTF(t, "peering", append([]string{"apply", "-auto-approve"}, args...)...)
	if out, _, code := r.tf(t, "peering", append([]string{"plan", "-detailed-exitcode"}, args...)...); code != 0 {
		t.Errorf("plan after apply: exit %d, want 0 (no changes)\n%s", code, out)
	}

	if r.networking {
		confs := &netv1beta1.ConfigurationList{}
		if err := r.clients["consumer"].List(ctx, confs, client.InNamespace(consts.TenantNamespace("provider"))); err != nil || len(confs.Items) != 1 {
			t.Fatalf("the consumer's Configurations of the provider: %d (%v), want 1", len(confs.Items), err)
		}
		conf := &confs.Items[0]
		if got := conf.Spec.Remote.CIDR.Pod; !slices.Equal(got, []netv1beta1.CIDR{"10.201.0.0/16", secondPodCIDR}) {
			t.Errorf("the consumer's Configuration %s/%s lists the provider's pod CIDRs %v, want both", conf.Namespace, conf.Name, got)
		}
		remaps, err := remap.FromConfiguration(conf)
		if err != nil {
			t.Fatal(err)
		}
		mapped = remap.Local(target, remaps)
		if mapped == target {
			t.Fatalf("the consumer does not remap the provider's second pod CIDR %s, its own external CIDR (status %+v)",
				secondPodCIDR, conf.Status.Remote)
		}
		t.Logf("the consumer sees the provider's pod CIDRs %v as %v: %s at %s", conf.Spec.Remote.CIDR.Pod, conf.Status.Remote.CIDR.Pod, target, mapped)

		// The consumer's gateway host routes the remapped address into the tunnel.
		if dev := routeDevice("consumer", mapped); !strings.HasPrefix(dev, "lqsb") {
			t.Errorf("the consumer's gateway host routes %s through %q, want its tunnel interface (lqsb...)", mapped, dev)
		}
		rtt, err := nsping.Ping(sandbox.PodNetns("consumer"), mapped, 3)
		if err != nil {
			t.Errorf("the consumer's pod does not reach the provider's second pod CIDR at %s (%s there): %v", mapped, target, err)
		} else {
			t.Logf("ping consumer pod -> provider pod in the second pod CIDR (%s, %s there) through the tunnel, average RTT %s", mapped, target, rtt)
		}
		out, err := sandbox.PodRequest(ctx, "consumer", mapped)
		t.Logf("%s", out)
		want := "pod the stand-in pod of cluster provider (" + target + ") answers " + sandbox.PodAddress("consumer")
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("HTTP from the consumer's pod to %s: %v; want the answer %q", mapped, err, want)
		}
		r.expectPodTraffic(t, "with a second pod CIDR", [2]string{"consumer", "provider"}, [2]string{"provider", "consumer"})
	}

	r.mustTF(t, "peering", append([]string{"destroy", "-auto-approve"}, args...)...)
	r.expectNothingLeft(t)
	if r.networking {
		if _, err := nsping.Ping(sandbox.PodNetns("consumer"), mapped, 1); err == nil {
			t.Errorf("after destroy, the consumer's pod still reaches %s", mapped)
		}
	}
}
