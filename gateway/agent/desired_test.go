package agent

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
)

// wantWaiting fails the test unless readDesired waits, with a message containing want.
func wantWaiting(t *testing.T, a *Agent, want string) {
	t.Helper()
	d, err := a.readDesired(t.Context())
	if !errors.Is(err, errWaiting) || !strings.Contains(err.Error(), want) {
		t.Fatalf("readDesired = %+v, %v; want waiting with %q", d, err, want)
	}
}

// wantError fails the test unless readDesired fails without waiting, with a message containing
// want.
func wantError(t *testing.T, a *Agent, want string) {
	t.Helper()
	d, err := a.readDesired(t.Context())
	if err == nil || errors.Is(err, errWaiting) || !strings.Contains(err.Error(), want) {
		t.Fatalf("readDesired = %+v, %v; want an error (not waiting) with %q", d, err, want)
	}
}

// TestReadDesiredServer builds a server's objects one at a time: readDesired waits for each
// missing one, naming it, and then reads the desired state from all of them.
func TestReadDesiredServer(t *testing.T) {
	cl := testCluster(t)
	c, ctx := cl.Client, t.Context()
	ns := newTenant(t, cl)
	a := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server"})

	wantWaiting(t, a, "GatewayServer "+ns+"/server")
	gw := gatewayServer(ns, "server", "", 0, 1380)
	gw.Spec.Endpoint.Port, gw.Spec.Endpoint.Ports = 0, []int32{40100, 40101}
	create(t, c, gw)
	wantWaiting(t, a, "the gateway's key Secret to be named")

	// The key Secret named in the status (where the controller writes the one it made).
	gw.Status.SecretRef = &corev1.ObjectReference{Name: "generated-keys"}
	if err := c.Status().Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	wantWaiting(t, a, "key Secret generated-keys")
	private := newKey(t)
	half := keySecret(ns, "generated-keys", private)
	half.Data["privateKey"] = half.Data["privateKey"][:16]
	create(t, c, half)
	wantWaiting(t, a, "a key is 32 bytes, got 16")
	half.Data["privateKey"] = []byte(private.String()) // base64 text is fine too
	if err := c.Update(ctx, half); err != nil {
		t.Fatal(err)
	}

	wantWaiting(t, a, "exactly one PublicKey in "+ns+" (found 0")
	peer := newKey(t).PublicKey()
	create(t, c, publicKey(ns, "peer", peer))
	wantWaiting(t, a, "exactly one Configuration in "+ns+" (found 0")
	conf := configuration(ns, "peer")
	create(t, c, conf)
	wantWaiting(t, a, "Configuration peer to declare the remote CIDRs")
	conf.Spec.Remote.CIDR.Pod = []netv1beta1.CIDR{"10.2.0.0/16"}
	conf.Spec.Remote.CIDR.External = []netv1beta1.CIDR{"10.3.0.0/16"}
	if err := c.Update(ctx, conf); err != nil {
		t.Fatal(err)
	}
	conf.Status.Remote = &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{"10.72.0.0/16"}}}
	if err := c.Status().Update(ctx, conf); err != nil {
		t.Fatal(err)
	}

	d, err := a.readDesired(ctx)
	if err != nil {
		t.Fatalf("readDesired with every object in place: %v", err)
	}
	if d.privateKey != private || d.peerKey != peer || d.listenPort != 40100 || d.mtu != 1380 || d.endpoint != nil {
		t.Errorf("desired: private key ok %t, peer key ok %t, port %d (want 40100), MTU %d (want 1380), endpoint %v (want none)",
			d.privateKey == private, d.peerKey == peer, d.listenPort, d.mtu, d.endpoint)
	}
	if g, ok := d.gateway.(*netv1beta1.GatewayServer); !ok || g.UID != gw.UID {
		t.Errorf("desired gateway = %T %v, want the GatewayServer %s", d.gateway, d.gateway.GetUID(), gw.UID)
	}
	if len(d.remote) != 2 || d.remote[0].Real.String() != "10.2.0.0/16" || d.remote[0].Mapped.String() != "10.72.0.0/16" ||
		d.remote[1].Real.String() != "10.3.0.0/16" || d.remote[1].Mapped.String() != "10.3.0.0/16" {
		t.Errorf("remote networks %+v, want 10.2.0.0/16 seen as 10.72.0.0/16 and 10.3.0.0/16 as is", d.remote)
	}

	// The spec's Secret wins over the status's, and the option over both.
	other := newKey(t)
	create(t, c, keySecret(ns, "spec-keys", other), keySecret(ns, "option-keys", newKey(t)))
	gw.Spec.SecretRef.Name = "spec-keys"
	gw.Spec.Endpoint.Port, gw.Spec.Endpoint.Ports = 40200, nil
	if err := c.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	if d, err := a.readDesired(ctx); err != nil || d.privateKey != other || d.listenPort != 40200 {
		t.Errorf("with spec.secretRef spec-keys and port 40200: %+v, %v", d, err)
	}
	a.opts.SecretName = "option-keys"
	if d, err := a.readDesired(ctx); err != nil || d.privateKey == other || d.privateKey == private {
		t.Errorf("with the Secret option: %+v, %v; want the key of option-keys", d, err)
	}
	a.opts.SecretName = "missing-keys"
	wantWaiting(t, a, "key Secret missing-keys")
}

// TestReadDesiredNamedObjects: with two PublicKeys and two Configurations in the namespace the
// agent waits until told which ones to follow; named ones must exist, and hold a valid key.
func TestReadDesiredNamedObjects(t *testing.T) {
	cl := testCluster(t)
	c, ctx := cl.Client, t.Context()
	ns := newTenant(t, cl)
	a := newTestAgent(t, cl, Options{Mode: ModeServer, Namespace: ns, GatewayName: "server"})
	first, second := newKey(t).PublicKey(), newKey(t).PublicKey()
	create(t, c, gatewayServer(ns, "server", "keys", 51840, 0), keySecret(ns, "keys", newKey(t)),
		publicKey(ns, "first", first), publicKey(ns, "second", second),
		configuration(ns, "first", "10.1.0.0/16"), configuration(ns, "second", "10.2.0.0/16"))

	wantWaiting(t, a, "exactly one PublicKey in "+ns+" (found 2; name one with --public-key)")
	a.opts.PublicKeyName = "absent"
	wantWaiting(t, a, "PublicKey absent")
	a.opts.PublicKeyName = "second"
	wantWaiting(t, a, "exactly one Configuration in "+ns+" (found 2; name one with --configuration)")
	a.opts.ConfigurationName = "absent"
	wantWaiting(t, a, "Configuration absent")
	a.opts.ConfigurationName = "second"
	d, err := a.readDesired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.peerKey != second || len(d.remote) != 1 || d.remote[0].Real.String() != "10.2.0.0/16" {
		t.Errorf("desired peer key is the second's: %t; remote %+v (want the second's 10.2.0.0/16)", d.peerKey == second, d.remote)
	}

	bad := &netv1beta1.PublicKey{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "second"}, bad); err != nil {
		t.Fatal(err)
	}
	bad.Spec.PublicKey = []byte(strings.Repeat("?", 44))
	if err := c.Update(ctx, bad); err != nil {
		t.Fatal(err)
	}
	wantError(t, a, "PublicKey second: parsing base64 key")
	secret := keySecret(ns, "keys", newKey(t))
	secret.Data["privateKey"] = []byte(strings.Repeat("?", 44))
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	wantError(t, a, "key Secret keys, field privateKey")
}

// TestReadDesiredClient: a client reads its GatewayClient and resolves the server's endpoint;
// an endpoint that is not UDP is an error, one without address is waited for.
func TestReadDesiredClient(t *testing.T) {
	cl := testCluster(t)
	c, ctx := cl.Client, t.Context()
	ns := newTenant(t, cl)
	a := newTestAgent(t, cl, Options{Mode: ModeClient, Namespace: ns, GatewayName: "client"})
	wantWaiting(t, a, "GatewayClient "+ns+"/client")

	private, peer := newKey(t), newKey(t).PublicKey()
	gw := gatewayClient(ns, "client", "keys", "localhost", 40300, 0)
	create(t, c, gw, keySecret(ns, "keys", private), publicKey(ns, "server", peer), configuration(ns, "server", "10.1.0.0/16"))
	d, err := a.readDesired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.endpoint.String() != "127.0.0.1:40300" || d.privateKey != private || d.peerKey != peer || d.mtu != 0 || d.listenPort != 0 {
		t.Errorf("desired: endpoint %s (want 127.0.0.1:40300), keys ok %t %t, MTU %d (want 0), port %d (want 0)",
			d.endpoint, d.privateKey == private, d.peerKey == peer, d.mtu, d.listenPort)
	}
	if g, ok := d.gateway.(*netv1beta1.GatewayClient); !ok || g.UID != gw.UID {
		t.Errorf("desired gateway = %T, want the GatewayClient", d.gateway)
	}

	tcp := corev1.ProtocolTCP
	gw.Spec.Endpoint.Protocol = &tcp
	if err := c.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	wantError(t, a, "WireGuard runs on UDP only")
	gw.Spec.Endpoint = netv1beta1.EndpointStatus{Ports: []int32{40301}}
	gw.Spec.SecretRef.Name = ""
	gw.Spec.MTU = 1300
	if err := c.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	wantWaiting(t, a, "endpoint address and port")
	gw.Spec.Endpoint.Addresses = []string{"192.0.2.9"}
	if err := c.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	wantWaiting(t, a, "the gateway's key Secret to be named")
	gw.Status.SecretRef = &corev1.ObjectReference{Name: "keys"}
	if err := c.Status().Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	if d, err := a.readDesired(ctx); err != nil || d.endpoint.String() != "192.0.2.9:40301" || d.mtu != 1300 || d.privateKey != private {
		t.Errorf("with the Secret in the status and the endpoint's ports: %+v, %v", d, err)
	}
}
