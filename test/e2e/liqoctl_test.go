package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// liqoctlBin is upstream Liqo's liqoctl that `make liqoctl` builds; `make test` names it.
func liqoctlBin(t *testing.T) string {
	t.Helper()
	return testenv.LiqoctlBin(t)
}

// liqoctl runs upstream liqoctl against the named sandbox cluster and returns its standard
// output; it fails the test on a non-zero exit or on a warning on standard error.
func (r *sandboxRun) liqoctl(t *testing.T, bin, cluster string, args ...string) []byte {
	t.Helper()
	return testenv.RunLiqoctl(t, bin, filepath.Join(r.state, cluster+".kubeconfig"), args...)
}

// liqoctlInfo is what `liqoctl info -o json` says (the fields checked).
type liqoctlInfo struct {
	Health struct {
		Healthy bool `json:"healthy"`
	} `json:"health"`
	Local struct {
		ClusterID     string `json:"clusterID"`
		Version       string `json:"version"`
		APIServerAddr string `json:"APIServerAddr"`
	} `json:"local"`
	Peerings struct {
		Peers []struct {
			ClusterID            string `json:"clusterID"`
			Role                 string `json:"role"`
			NetworkingStatus     string `json:"networkingStatus"`
			AuthenticationStatus string `json:"authenticationStatus"`
			OffloadingStatus     string `json:"offloadingStatus"`
		} `json:"peers"`
	} `json:"peerings"`
}

// liqoctlPeer is what `liqoctl info peer <id> -o json` says of one peer (the fields checked).
type liqoctlPeer = testenv.LiqoctlPeer

// TestLiqoctlInfo: upstream liqoctl v1.2.0 reads our sandbox as a Liqo installation. Before any
// peering, `liqoctl info` on each cluster gives its cluster ID, our version and its API server,
// healthy, with no warning. With examples/peering applied, each side lists the other with its
// role and every module Healthy, and `liqoctl info peer` shows on the consumer the provider's
// API server, the slice it consumes (accepted) and the virtual node made from it, and on the
// provider the slice it provides. Then `liqoctl unpeer` removes that peering, leaving nothing,
// and `terraform destroy` still succeeds.
func TestLiqoctlInfo(t *testing.T) {
	bin := liqoctlBin(t)
	r := startSandbox(t, 2)
	info := func(cluster string) liqoctlInfo {
		t.Helper()
		var out liqoctlInfo
		raw := r.liqoctl(t, bin, cluster, "info", "-o", "json")
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("liqoctl info -o json on %s: %v\n%s", cluster, err, raw)
		}
		return out
	}
	for _, c := range []string{"consumer", "provider"} {
		got := info(c)
		if got.Local.ClusterID != c || got.Local.Version != version.Version || !strings.HasPrefix(got.Local.APIServerAddr, "https://") ||
			!got.Health.Healthy || len(got.Peerings.Peers) != 0 {
			t.Errorf("liqoctl info on %s before peering: %+v; want cluster ID %s, version %s, an API server, healthy, no peer",
				c, got, c, version.Version)
		}
	}

	args := r.tfArgs("peering", "consumer_kubeconfig="+filepath.Join(r.state, "consumer.kubeconfig"),
		"provider_kubeconfig="+filepath.Join(r.state, "provider.kubeconfig"))
	r.mustTF(t, "peering", append([]string{"apply", "-auto-approve"}, args...)...)
	networking := "Healthy"
	if !r.networking {
		networking = "Disabled"
	}
	for c, peer := range map[string][2]string{"consumer": {"provider", "Provider"}, "provider": {"consumer", "Consumer"}} {
		got := info(c)
		if len(got.Peerings.Peers) != 1 {
			t.Errorf("liqoctl info on %s: peers %+v, want %s", c, got.Peerings.Peers, peer[0])
			continue
		}
		p := got.Peerings.Peers[0]
		if p.ClusterID != peer[0] || p.Role != peer[1] || p.NetworkingStatus != networking ||
			p.AuthenticationStatus != "Healthy" || p.OffloadingStatus != "Healthy" {
			t.Errorf("liqoctl info on %s: peer %+v, want %s as %s, networking %s, authentication and offloading Healthy",
				c, p, peer[0], peer[1], networking)
		}
	}
	r.expectLiqoctlPeering(t, bin, "with examples/peering applied")
	r.expectUpstreamAccepts(t)

	// liqoctl unpeer removes the peering liqo_peering made, and destroy then has nothing left
	// to do but forget it.
	r.liqoctl(t, bin, "consumer", "unpeer", "--delete-namespaces", "--timeout", "3m",
		"--remote-kubeconfig", filepath.Join(r.state, "provider.kubeconfig"))
	r.expectNothingLeft(t)
	r.mustTF(t, "peering", append([]string{"destroy", "-auto-approve"}, args...)...)
	r.expectNothingLeft(t)
}

// expectLiqoctlPeering: `liqoctl info peer -o json` on the consumer shows the provider with its
// API server, authentication Healthy, one accepted slice it consumes and one healthy virtual node
// made from it; on the provider, the consumer with the slice it provides. It returns the
// consumer's view and its raw output.
func (r *sandboxRun) expectLiqoctlPeering(t *testing.T, bin, when string) (liqoctlPeer, []byte) {
	t.Helper()
	view := func(on, peer string) (liqoctlPeer, []byte) {
		t.Helper()
		var out map[string]liqoctlPeer
		raw := r.liqoctl(t, bin, on, "info", "peer", peer, "-o", "json")
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("liqoctl info peer %s -o json on %s: %v\n%s", peer, on, err, raw)
		}
		return out[peer], raw
	}
	p, raw := view("consumer", "provider")
	if p.Info.Role != "Provider" || p.Authentication.Status != "Healthy" || !strings.HasPrefix(p.Authentication.APIServerAddr, "https://") ||
		len(p.Authentication.ResourceSlices) != 1 || p.Authentication.ResourceSlices[0].Action != "Consuming" || !p.Authentication.ResourceSlices[0].Accepted ||
		len(p.Offloading.VirtualNodes) != 1 || p.Offloading.VirtualNodes[0].Status != "Healthy" ||
		p.Offloading.VirtualNodes[0].ResourceSlice != p.Authentication.ResourceSlices[0].Name {
		t.Errorf("liqoctl info peer provider on the consumer %s:\n%s", when, raw)
	}
	q, qraw := view("provider", "consumer")
	if q.Info.Role != "Consumer" || len(q.Authentication.ResourceSlices) != 1 ||
		q.Authentication.ResourceSlices[0].Action != "Providing" || !q.Authentication.ResourceSlices[0].Accepted {
		t.Errorf("liqoctl info peer consumer on the provider %s:\n%s", when, qraw)
	}
	return p, raw
}

// TestLiqoctlPeer: peerings made by upstream liqoctl v1.2.0 against our controllers show
// healthy in its own `info`, and its unpeer commands remove everything they made.
//
// First `liqoctl peer` with networking where the sandbox runs gateways (root): Configurations
// exchanged and remapped, gateway server and client from the default templates, public keys, a
// Connected tunnel that carries pod traffic, then the handshake, the slice and the virtual node;
// a namespace offloaded and unoffloaded; then `liqoctl force unpeer` on each side (as after a
// partition) leaves nothing. Then `liqoctl peer --networking-disabled` and `liqoctl unpeer
// --delete-namespaces`, leaving nothing; before that unpeer, `liqoctl cordon resourceslice` and
// `uncordon` on the provider take the virtual node out of scheduling and back
// (cordonAndUncordon), `terraform query` finds that peering and generates its import
// (queryLiqoctlPeering), and the slice is cordoned again (the unpeer completes all the same).
// Without gateways, the networked peering is skipped.
func TestLiqoctlPeer(t *testing.T) {
	bin := liqoctlBin(t)
	r := startSandbox(t, 2)
	remote := []string{"--remote-kubeconfig", filepath.Join(r.state, "provider.kubeconfig")}

	if r.networking {
		start := time.Now()
		r.liqoctl(t, bin, "consumer", append([]string{"peer", "--timeout", "3m"}, remote...)...)
		t.Logf("liqoctl peer with networking: %s", time.Since(start).Round(100*time.Millisecond))
		p, raw := r.expectLiqoctlPeering(t, bin, "after liqoctl peer")
		if p.Network.Status != "Healthy" {
			t.Errorf("liqoctl info peer provider on the consumer after liqoctl peer: network not Healthy:\n%s", raw)
		}
		r.expectPodTraffic(t, "liqoctl peer", [2]string{"consumer", "provider"}, [2]string{"provider", "consumer"})
		if node := p.Offloading.VirtualNodes; len(node) == 1 {
			r.offloadAndUnoffload(t, bin, node[0].Name)
		}
		r.importLiqoctlPeering(t)
		r.liqoctl(t, bin, "consumer", append([]string{"peer", "--timeout", "3m"}, remote...)...)
		// force unpeer is for a peer that is gone: each side forgets the other on its own.
		r.liqoctl(t, bin, "consumer", "force", "unpeer", "provider", "--skip-confirm")
		r.liqoctl(t, bin, "provider", "force", "unpeer", "consumer", "--skip-confirm")
		r.expectNothingLeft(t)
		r.expectNoPodTraffic(t, "after liqoctl force unpeer", "consumer", "provider")
	}

	r.liqoctl(t, bin, "consumer", append([]string{"peer", "--networking-disabled", "--timeout", "3m"}, remote...)...)
	p, raw := r.expectLiqoctlPeering(t, bin, "after liqoctl peer --networking-disabled")
	if p.Network.Status != "Disabled" {
		t.Errorf("liqoctl info peer provider on the consumer after liqoctl peer --networking-disabled: network not Disabled:\n%s", raw)
	}
	node := p.Offloading.VirtualNodes
	if len(node) == 1 && !r.nodeReady(t, "consumer", node[0].Name) {
		t.Errorf("virtual node %s is not Ready after liqoctl peer", node[0].Name)
	}
	if len(node) == 1 && !r.networking {
		r.offloadAndUnoffload(t, bin, node[0].Name)
	}
	if slices := p.Authentication.ResourceSlices; len(node) == 1 && len(slices) == 1 {
		r.cordonAndUncordon(t, bin, node[0].Name, slices[0].Name)
	}
	r.queryLiqoctlPeering(t)
	if slices := p.Authentication.ResourceSlices; len(slices) == 1 {
		// Unpeered while the provider cordons the slice: its hold on the copy goes with the Tenant.
		r.liqoctlPrinted(t, bin, "provider", "cordon", "resourceslice", slices[0].Name, "--remote-cluster-id", "consumer", "--skip-confirm")
	}
	r.liqoctl(t, bin, "consumer", append([]string{"unpeer", "--delete-namespaces", "--timeout", "3m"}, remote...)...)
	r.expectNothingLeft(t)
}

// importLiqoctlPeering brings the peering liqoctl made (networking, default resources) under
// Terraform with examples/liqoctl-import: its first plan only imports, and after the apply the
// next plans nothing, the status reporting every module as it is; a change of resources then
// re-negotiates the peering in place through liqoctl's own gateways (no second one beside them),
// and destroy removes it all.
func (r *sandboxRun) importLiqoctlPeering(t *testing.T) {
	t.Helper()
	const example = "liqoctl-import"
	args := r.tfArgs(example, "consumer_kubeconfig="+filepath.Join(r.state, "consumer.kubeconfig"),
		"provider_kubeconfig="+filepath.Join(r.state, "provider.kubeconfig"))
	out, _, _ := r.tf(t, example, append([]string{"plan"}, args...)...)
	if !strings.Contains(out, "Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.") {
		t.Errorf("first plan of examples/%s over the liqoctl peering: want only the import\n%s", example, out)
	}
	t.Run("tofu-plan", func(t *testing.T) { // the same plan under OpenTofu (LIQO_TOFU)
		out, _, _ := cliIn(t, requireTofu(t), filepath.Join(r.root, "examples", example), r.tfEnv, append([]string{"plan"}, args...)...)
		if !strings.Contains(out, "Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.") {
			t.Errorf("tofu plan of examples/%s over the liqoctl peering: want only the import\n%s", example, out)
		}
	})
	r.mustTF(t, example, append([]string{"apply", "-auto-approve"}, args...)...)
	if out, _, code := r.tf(t, example, append([]string{"plan", "-detailed-exitcode"}, args...)...); code != 0 {
		t.Errorf("plan after importing the liqoctl peering: exit %d, want 0 (no change)\n%s", code, out)
	}
	out, _, code := r.tf(t, example, "output", "-no-color", "-state="+filepath.Join(r.state, example+".tfstate"), "-json", "status")
	var status map[string]string
	if err := json.Unmarshal([]byte(out), &status); code != 0 || err != nil {
		t.Fatalf("terraform output status: exit %d, %v\n%s", code, err, out)
	}
	want := map[string]string{"networking": "Established", "authentication": "Established", "offloading": "Ready"}
	for k, v := range want {
		if status[k] != v {
			t.Errorf("status of the imported liqoctl peering: %v, want %v", status, want)
			break
		}
	}

	changed := append(append([]string(nil), args...), "-var", "cpu=3")
	r.mustTF(t, example, append([]string{"apply", "-auto-approve"}, changed...)...)
	for cluster, list := range map[string]client.ObjectList{"provider": &netv1beta1.GatewayServerList{}, "consumer": &netv1beta1.GatewayClientList{}} {
		if err := r.clients[cluster].List(t.Context(), list); err != nil {
			t.Fatal(err)
		}
		if n := meta.LenList(list); n != 1 {
			t.Errorf("%d gateways (%T) on %s after updating the imported peering, want liqoctl's one", n, list, cluster)
		}
	}
	r.mustTF(t, example, append([]string{"destroy", "-auto-approve"}, changed...)...)
	r.expectNothingLeft(t)
}

// offloadedDeployment makes namespace ns on the consumer, offloads it with `liqoctl offload
// namespace` (pods remote only), and creates in it Deployment "web" (label app=web) of replicas.
func (r *sandboxRun) offloadedDeployment(t *testing.T, bin, ns string, replicas int32) *appsv1.Deployment {
	t.Helper()
	c := r.clients["consumer"]
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	r.liqoctl(t, bin, "consumer", "offload", "namespace", ns, "--pod-offloading-strategy", "Remote", "--timeout", "1m")
	return webDeployment(t, c, ns, replicas)
}

// offloadAndUnoffload: `liqoctl offload namespace` sends a Deployment's pods to the virtual
// node, where they run; `liqoctl unoffload namespace` leaves none of them Running there.
func (r *sandboxRun) offloadAndUnoffload(t *testing.T, bin, node string) {
	t.Helper()
	ctx := t.Context()
	c := r.clients["consumer"]
	const ns = "liqoctl-offloaded"
	r.offloadedDeployment(t, bin, ns, 2)
	runningOnNode := func(ctx context.Context) (int, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		n := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n, nil
	}
	testenv.Eventually(t, "the Deployment's 2 pods Running on "+node, 2*time.Minute, func(ctx context.Context) bool {
		n, err := runningOnNode(ctx)
		return err == nil && n == 2
	})
	start := time.Now()
	r.liqoctl(t, bin, "consumer", "unoffload", "namespace", ns, "--skip-confirm", "--timeout", "1m")
	testenv.Eventually(t, "no pod Running on "+node+" after unoffload", 30*time.Second, func(ctx context.Context) bool {
		n, err := runningOnNode(ctx)
		return err == nil && n == 0
	})
	t.Logf("unoffload: no pod Running on the virtual node %s after it was called", time.Since(start).Round(100*time.Millisecond))
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
}
