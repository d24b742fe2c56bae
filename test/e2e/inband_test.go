package e2e

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/identities"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/remap"
	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// inBandProxyURL is the proxy URL the consumer should reach the provider's API server through:
// the provider's IP api-server-proxy's external address (waited for), as the consumer's
// Configuration of the provider maps it, port 8118.
func (r *sandboxRun) inBandProxyURL(t *testing.T) string {
	t.Helper()
	ip := &ipamv1alpha1.IP{}
	key := client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.APIServerProxyIP}
	testenv.Poll(t, "the provider's IP "+key.String()+" with an external address", time.Minute, func(ctx context.Context) (bool, error) {
		err := r.clients["provider"].Get(ctx, key, ip)
		return err == nil && ip.Status.IP != "", client.IgnoreNotFound(err)
	})
	conf := &netv1beta1.Configuration{}
	if err := r.clients["consumer"].Get(t.Context(), client.ObjectKey{Namespace: consts.TenantNamespace("provider"), Name: "provider"}, conf); err != nil {
		t.Fatalf("the consumer's Configuration of the provider: %v", err)
	}
	remaps, err := remap.FromConfiguration(conf)
	if err != nil {
		t.Fatal(err)
	}
	addr := remap.Local(string(ip.Status.IP), remaps)
	t.Logf("the provider's API-server proxy: cluster IP %s, external address %s, reached by the consumer at %s", ip.Spec.IP, ip.Status.IP, addr)
	return "http://" + net.JoinHostPort(addr, strconv.Itoa(consts.APIServerProxyPort))
}

// apiServerHost is host:port of a sandbox cluster's API server, from its kubeconfig.
func (r *sandboxRun) apiServerHost(t *testing.T, cluster string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(r.state + "/" + cluster + ".kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		return u.Host
	}
	t.Fatalf("no cluster in %s's kubeconfig", cluster)
	return ""
}

// identityProxyURL is the proxy-url of the consumer's control-plane identity of the provider.
func (r *sandboxRun) identityProxyURL(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	ns := consts.TenantNamespace("provider")
	name, err := identities.ControlPlaneSecret(ctx, r.clients["consumer"], ns, "provider")
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := r.clients["consumer"].Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(secret.Data[consts.KubeconfigSecretKey])
	if err != nil {
		t.Fatalf("the kubeconfig of Secret %s/%s: %v", ns, name, err)
	}
	for _, c := range kc.Clusters {
		return c.ProxyURL
	}
	return ""
}

// expectOffloadedPodsRun offloads namespace ns with liqoctl, makes a Deployment of 2 replicas
// in it and waits until both pods are Running on the virtual node node, as the provider reports
// them back through the consumer's virtual kubelet; then deletes the namespace.
func (r *sandboxRun) expectOffloadedPodsRun(t *testing.T, bin, ns, node string) {
	t.Helper()
	c := r.clients["consumer"]
	start := time.Now()
	r.offloadedDeployment(t, bin, ns, 2)
	testenv.Eventually(t, "the Deployment's 2 pods Running on "+node, 2*time.Minute, func(ctx context.Context) bool {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return false
		}
		n := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n == 2
	})
	t.Logf("in-band: 2 offloaded pods Running on %s %s after the Deployment was made", node, time.Since(start).Round(100*time.Millisecond))
	if err := c.Delete(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
}

// TestInBandPeering: the consumer's controller manager runs isolated (the sandbox's -isolate:
// in its stand-in pod's network namespace, where the provider's API server is not reachable),
// so the peering works only in-band. liqo_peering with in_band = true (examples/peering) gives
// the consumer an identity whose proxy URL is the provider's API-server proxy at its address in
// the provider's external CIDR, as the consumer maps it; through it and the tunnel, the virtual
// node comes up and offloaded pods run on the provider with their status back on the consumer.
// Upstream liqoctl v1.2.0 shows that proxy as the provider's API server address. The plan after
// apply is empty, and destroy leaves nothing. Then upstream's own `liqoctl peer --in-band`
// peers the same clusters against our controllers, with the same result, and `liqoctl unpeer`
// removes it.
func TestInBandPeering(t *testing.T) {
	bin := liqoctlBin(t)
	r := startSandbox(t, 2, "-"+sandbox.IsolateFlag, "consumer")
	if !r.networking {
		t.Skip("in-band peering goes through the tunnel: the sandbox runs no gateways here (not root)")
	}
	ctx := t.Context()
	provAPI := r.apiServerHost(t, "provider")
	if conn, err := netns.DialContext(ctx, netns.Named(sandbox.PodNetns("consumer")), "tcp", provAPI); err == nil {
		_ = conn.Close()
		t.Fatalf("the isolated consumer's network namespace reaches the provider's API server at %s directly", provAPI)
	}

	args := r.tfArgs("peering", "consumer_kubeconfig="+r.state+"/consumer.kubeconfig",
		"provider_kubeconfig="+r.state+"/provider.kubeconfig", "in_band=true")
	took := r.mustTF(t, "peering", append([]string{"apply", "-auto-approve"}, args...)...)
	t.Logf("in-band apply: %s", took.Round(100*time.Millisecond))
	if out, _, code := r.tf(t, "peering", append([]string{"plan", "-detailed-exitcode"}, args...)...); code != 0 {
		t.Errorf("plan after the in-band apply: exit %d, want 0 (no changes)\n%s", code, out)
	}
	want := r.inBandProxyURL(t)
	if got := r.identityProxyURL(t); got != want {
		t.Errorf("the consumer's identity of the provider goes through %q, want the provider's API-server proxy %q", got, want)
	}
	if !r.nodeReady(t, "consumer", "provider") {
		t.Errorf("the virtual node provider is not Ready after the in-band apply")
	}
	r.expectOffloadedPodsRun(t, bin, "inband-tf", "provider")
	p, raw := r.liqoctlPeerInfo(t, bin, "consumer", "provider")
	t.Logf("liqoctl info peer provider on the consumer, in-band:\n%s", raw)
	if p.Authentication.Status != "Healthy" || p.Authentication.APIServerAddr != want {
		t.Errorf("liqoctl info peer provider: authentication %q at %q, want Healthy at the proxy %q", p.Authentication.Status,
			p.Authentication.APIServerAddr, want)
	}
	r.mustTF(t, "peering", append([]string{"destroy", "-auto-approve"}, args...)...)
	r.expectNothingLeft(t)

	// Upstream liqoctl's own in-band peering, against our controllers.
	start := time.Now()
	r.liqoctl(t, bin, "consumer", "peer", "--remote-kubeconfig", r.state+"/provider.kubeconfig", "--in-band", "--timeout", "3m")
	t.Logf("liqoctl peer --in-band: %s", time.Since(start).Round(100*time.Millisecond))
	if got, want := r.identityProxyURL(t), r.inBandProxyURL(t); got != want {
		t.Errorf("after liqoctl peer --in-band, the consumer's identity goes through %q, want %q", got, want)
	}
	r.expectOffloadedPodsRun(t, bin, "inband-liqoctl", "provider")
	r.liqoctl(t, bin, "consumer", "unpeer", "--remote-kubeconfig", r.state+"/provider.kubeconfig", "--delete-namespaces", "--timeout", "3m")
	r.expectNothingLeft(t)
}
