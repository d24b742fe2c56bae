package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/gateway/nat"
	"github.com/peerkit/terraform-provider-liqo/gateway/netcfg"
	"github.com/peerkit/terraform-provider-liqo/gateway/probe"
	"github.com/peerkit/terraform-provider-liqo/gateway/tunnel"
	"github.com/peerkit/terraform-provider-liqo/internal/api"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// failuresBeforeDown is how many probes in a row must fail before the tunnel counts as down.
const failuresBeforeDown = 3

// latencyRefresh is how often a Connected Connection's latency is rewritten.
const latencyRefresh = 10 * time.Second

// Agent runs one gateway. Make it with New, run it with Run.
type Agent struct {
	opts   Options
	log    logr.Logger
	reader client.Reader // the namespace's cache
	writer client.Client // direct, for the Connection
	cache  cache.Cache
	// ips reads the IPs of the Liqo namespace (ipCache).
	ips     client.Reader
	ipCache cache.Cache

	localAddr, peerAddr *net.IPNet

	dev       *tunnel.Device
	responder *probe.Responder
	applied   *desired
	mtu       int
	rules     *nat.Rules
	allowed   []net.IPNet
	gateway   client.Object // the last GatewayServer or GatewayClient read

	configuredAt  time.Time // when the peer was last (re)configured or reset
	handshakeSeen time.Time // the handshake time already reported
	// handshakeWritten is the handshake time last written on the Connection.
	handshakeWritten time.Time
	failures         int
	lastReset        time.Time
	status           netv1beta1.ConnectionStatusValue
	statusWritten    time.Time
	lastErr          string
}

// New prepares an agent for the cluster behind cfg. Nothing changes on the host before Run.
func New(cfg *rest.Config, opts Options, log logr.Logger) (*Agent, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	scheme, err := api.NewScheme()
	if err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}}})
	if err != nil {
		return nil, fmt.Errorf("creating cache: %w", err)
	}
	// The IPs of the Liqo namespace, the only objects the gateway reads there (and the only ones
	// it may read).
	ipCache, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{opts.LiqoNamespace: {}}})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of namespace %s: %w", opts.LiqoNamespace, err)
	}
	w, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	a := &Agent{opts: opts, log: log.WithValues("interface", opts.Interface, "namespace", opts.Namespace), reader: c, writer: w, cache: c,
		ips: ipCache, ipCache: ipCache}
	server, clientAddr, err := tunnelAddrs(opts.TunnelCIDR)
	if err != nil {
		return nil, err
	}
	a.localAddr, a.peerAddr = server, clientAddr
	if opts.Mode == ModeClient {
		a.localAddr, a.peerAddr = clientAddr, server
	}
	return a, nil
}

// Interface is the tunnel interface name the agent uses.
func (a *Agent) Interface() string { return a.opts.Interface }

// Run watches the objects and keeps the tunnel in line with them until ctx ends; then it removes
// its interface, routes and rules and returns.
func (a *Agent) Run(ctx context.Context) (err error) {
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	gw := client.Object(&netv1beta1.GatewayServer{})
	if a.opts.Mode == ModeClient {
		gw = &netv1beta1.GatewayClient{}
	}
	watched := []struct {
		cache cache.Cache
		obj   client.Object
	}{{a.cache, gw}, {a.cache, &corev1.Secret{}}, {a.cache, &netv1beta1.PublicKey{}}, {a.cache, &netv1beta1.Configuration{}},
		{a.ipCache, &ipamv1alpha1.IP{}}}
	for _, w := range watched {
		inf, err := w.cache.GetInformer(ctx, w.obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", w.obj, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("handling events of %T: %w", w.obj, err)
		}
	}
	cacheCtx, stopCache := context.WithCancel(ctx)
	caches := map[string]cache.Cache{a.opts.Namespace: a.cache, a.opts.LiqoNamespace + " (IPs)": a.ipCache}
	cacheDone := make(chan error, len(caches))
	for ns, c := range caches {
		go func() {
			if err := c.Start(cacheCtx); err != nil {
				cacheDone <- fmt.Errorf("running the cache of namespace %s: %w", ns, err)
				return
			}
			cacheDone <- nil
		}()
	}
	defer func() {
		stopCache()
		for range caches {
			err = errors.Join(err, <-cacheDone)
		}
	}()
	for ns, c := range caches {
		if !c.WaitForCacheSync(ctx) {
			return fmt.Errorf("syncing the cache of namespace %s: %w", ns, ctx.Err())
		}
	}
	defer func() { err = errors.Join(err, a.shutdown()) }()

	ticker := time.NewTicker(a.opts.ProbeInterval)
	defer ticker.Stop()
	resync := time.NewTicker(30 * time.Second)
	defer resync.Stop()
	poke()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-trigger:
			a.reconcile(ctx)
		case <-resync.C:
			a.reconcile(ctx)
		case <-ticker.C:
			if a.lastErr != "" {
				a.reconcile(ctx) // retry what failed
			}
			a.probe(ctx)
		case <-a.devDone():
			return errors.New("the tunnel device stopped")
		}
	}
}

func (a *Agent) devDone() <-chan struct{} {
	if a.dev == nil {
		return nil
	}
	return a.dev.Done()
}

// reconcile brings the host in line with the objects, and reports failures on the Connection.
func (a *Agent) reconcile(ctx context.Context) {
	d, err := a.readDesired(ctx)
	if err == nil {
		err = a.apply(ctx, d)
	}
	if err != nil {
		if msg := err.Error(); msg != a.lastErr {
			a.log.Info("not ready", "reason", msg)
			a.lastErr = msg
		}
		value := netv1beta1.ConnectionError
		if errors.Is(err, errWaiting) {
			value = netv1beta1.Connecting
		}
		if a.applied == nil || !errors.Is(err, errWaiting) {
			a.writeStatus(ctx, value, 0)
		}
		return
	}
	a.lastErr = ""
}

// apply changes the host to match d: device, address and MTU, WireGuard configuration, routes,
// rules.
func (a *Agent) apply(ctx context.Context, d *desired) error {
	a.gateway = d.gateway
	mtu := d.mtu
	if mtu == 0 {
		var dst net.IP
		if d.endpoint != nil {
			dst = d.endpoint.IP
		}
		underlay, err := netcfg.UnderlayMTU(dst, a.opts.Interface)
		if err != nil {
			return fmt.Errorf("finding the underlay MTU: %w", err)
		}
		mtu = underlay - 60
	}
	if a.dev == nil {
		if err := netcfg.EnableForwarding(); err != nil {
			return err
		}
		// A predecessor that was killed leaves its rules behind (its interface went with it).
		if err := (&nat.Rules{Interface: a.opts.Interface}).Remove(); err != nil {
			return fmt.Errorf("removing leftover NAT rules: %w", err)
		}
		// Gateways before the stateless rewrite routed remapped traffic by a fwmark rule.
		if err := netcfg.DeleteRule(a.opts.RouteTable, a.opts.RouteTable); err != nil {
			return err
		}
		dev, err := tunnel.Create(a.log, a.opts.Interface, mtu)
		if err != nil {
			return fmt.Errorf("creating the tunnel: %w", err)
		}
		a.dev = dev
		a.log.Info("tunnel interface created", "mtu", mtu)
		// A predecessor may have left Connected behind.
		a.writeStatus(ctx, netv1beta1.Connecting, 0)
	}
	if mtu != a.mtu {
		if err := netcfg.SetUp(a.opts.Interface, a.localAddr, mtu); err != nil {
			return err
		}
		if a.mtu != 0 {
			a.log.Info("tunnel MTU changed", "from", a.mtu, "to", mtu)
		}
		a.mtu = mtu
	}
	if a.responder == nil {
		r, err := probe.Listen(a.localAddr.IP)
		if err != nil {
			return err
		}
		a.responder = r
	}

	p := a.plan(d)
	if a.applied == nil || !sameTunnel(a.applied, d) {
		peer := a.peer(d, p.allowed)
		rotated := a.applied != nil && (a.applied.privateKey != d.privateKey || a.applied.peerKey != d.peerKey)
		// Taken before: the handshake may complete before Configure returns.
		a.configuredAt = time.Now()
		if err := a.dev.Configure(tunnel.Config{PrivateKey: d.privateKey, ListenPort: d.listenPort, Peer: peer}); err != nil {
			return err
		}
		a.allowed = p.allowed
		a.log.Info("tunnel configured", "listenPort", d.listenPort, "endpoint", fmt.Sprint(d.endpoint),
			"peerPublicKey", d.peerKey.String(), "keysChanged", rotated)
	}
	if err := netcfg.SyncRoutes(a.opts.Interface, 0, p.routes); err != nil {
		return err
	}
	rules := &nat.Rules{Interface: a.opts.Interface, MTU: mtu, Remaps: p.remaps, ExternalIPs: d.externalIPs}
	if a.rules == nil || !reflect.DeepEqual(*a.rules, *rules) {
		if err := rules.Sync(); err != nil {
			return fmt.Errorf("writing NAT rules: %w", err)
		}
		a.rules = rules
		a.log.Info("NAT rules written", "remaps", len(p.remaps), "externalIPs", fmt.Sprint(d.externalIPs), "mssClamp", mtu-40)
	}
	a.applied = d
	return nil
}

// tunnelPlan is what the agent configures for the remote networks of a desired state.
type tunnelPlan struct {
	// allowed are the networks WireGuard accepts from and sends to the peer: the peer's tunnel
	// address, then the remote networks as the remote cluster uses them.
	allowed []net.IPNet
	// routes are the remote networks as the local cluster sees them, routed into the tunnel.
	routes []net.IPNet
	// remaps are the remote networks the local cluster sees under other addresses: the NAT
	// rules rewrite between the two.
	remaps []nat.Remap
}

// plan says what to configure for d: WireGuard carries the remote networks as the remote
// cluster uses them; the local cluster routes them into the tunnel as it sees them (the rules
// rewrite between the two).
func (a *Agent) plan(d *desired) tunnelPlan {
	p := tunnelPlan{allowed: []net.IPNet{{IP: a.peerAddr.IP, Mask: net.CIDRMask(32, 32)}}}
	for _, r := range d.remote {
		p.allowed = append(p.allowed, r.Real)
		p.routes = append(p.routes, r.Mapped)
		if r.Remapped() {
			p.remaps = append(p.remaps, r)
		}
	}
	return p
}

func (a *Agent) peer(d *desired, allowed []net.IPNet) tunnel.Peer {
	return tunnel.Peer{PublicKey: d.peerKey, Endpoint: d.endpoint, AllowedIPs: allowed, Keepalive: a.opts.Keepalive}
}

// sameTunnel tells whether two states configure WireGuard the same way.
func sameTunnel(x, y *desired) bool {
	return x.privateKey == y.privateKey && x.peerKey == y.peerKey && x.listenPort == y.listenPort &&
		x.endpoint.String() == y.endpoint.String() && reflect.DeepEqual(x.remote, y.remote)
}

// probe measures the tunnel and updates the Connection; a client whose tunnel stopped answering
// drops its session so that a new handshake starts at once.
func (a *Agent) probe(ctx context.Context) {
	if a.dev == nil || a.applied == nil {
		return
	}
	a.reportHandshake()
	rtt, err := probe.Once(ctx, a.peerAddr.IP, min(a.opts.ProbeInterval, time.Second))
	if err != nil {
		a.failures++
		if a.failures == failuresBeforeDown {
			a.log.Info("tunnel not answering", "reason", err.Error())
		}
		if a.failures >= failuresBeforeDown {
			a.writeStatus(ctx, netv1beta1.Connecting, 0)
		}
		if a.opts.Mode == ModeClient && a.failures >= 2 && time.Since(a.lastReset) >= time.Second {
			a.lastReset = time.Now()
			a.configuredAt = a.lastReset
			if err := a.dev.ResetPeer(a.peer(a.applied, a.allowed)); err != nil {
				a.log.Error(err, "resetting the peer")
			}
		}
		return
	}
	if a.failures >= failuresBeforeDown || a.status != netv1beta1.Connected {
		a.log.Info("tunnel connected", "latency", rtt.String())
	}
	a.failures = 0
	a.writeStatus(ctx, netv1beta1.Connected, rtt)
}

// reportHandshake logs the first handshake after each (re)configuration, with how long it took.
func (a *Agent) reportHandshake() {
	_, peer, err := a.dev.State()
	if err != nil || peer.LastHandshake.IsZero() || !peer.LastHandshake.After(a.handshakeSeen) {
		return
	}
	if peer.LastHandshake.After(a.configuredAt) && a.handshakeSeen.Before(a.configuredAt) {
		a.log.Info("handshake completed", "afterConfiguredMicroseconds", peer.LastHandshake.Sub(a.configuredAt).Microseconds(),
			"endpoint", fmt.Sprint(peer.Endpoint))
	}
	a.handshakeSeen = peer.LastHandshake
}

// writeStatus creates the Connection when missing and writes its status when it changed (or
// the latency is old, or a new handshake completed).
func (a *Agent) writeStatus(ctx context.Context, value netv1beta1.ConnectionStatusValue, rtt time.Duration) {
	if value == a.status && a.handshakeWritten.Equal(a.handshakeSeen) &&
		(value != netv1beta1.Connected || time.Since(a.statusWritten) < latencyRefresh) {
		return
	}
	if err := a.putStatus(ctx, value, rtt); err != nil {
		a.log.Error(err, "writing the Connection status")
		return
	}
	a.handshakeWritten = a.handshakeSeen
	if value != a.status {
		a.log.Info("connection status", "value", string(value))
	}
	a.status, a.statusWritten = value, time.Now()
}

func (a *Agent) putStatus(ctx context.Context, value netv1beta1.ConnectionStatusValue, rtt time.Duration) error {
	conn := &netv1beta1.Connection{}
	key := client.ObjectKey{Namespace: a.opts.Namespace, Name: a.opts.ConnectionName}
	err := a.writer.Get(ctx, key, conn)
	switch {
	case apierrors.IsNotFound(err):
		conn = a.newConnection()
		a.connectionMeta(conn)
		if err := a.writer.Create(ctx, conn); err != nil {
			return fmt.Errorf("creating Connection %s: %w", key, err)
		}
	case err != nil:
		return fmt.Errorf("getting Connection %s: %w", key, err)
	case a.connectionMeta(conn):
		if err := a.writer.Update(ctx, conn); err != nil {
			return fmt.Errorf("labelling Connection %s: %w", key, err)
		}
	}
	conn.Status.Value = value
	if value == netv1beta1.Connected {
		conn.Status.Latency = netv1beta1.ConnectionLatency{Value: rtt.Round(time.Microsecond).String(), Timestamp: metav1.Now()}
	}
	if err := a.writer.Status().Update(ctx, conn); err != nil {
		return fmt.Errorf("updating Connection %s status: %w", key, err)
	}
	return nil
}

// connectionMeta gives conn the time of the last handshake seen (LastHandshakeAnnotation) and
// what upstream Liqo's tools find it by, once the gateway object is known: the gateway's
// liqo.io/remote-cluster-id label (upstream liqoctl waits for the Connection of a peer by it) and
// the gateway as controlling owner, so that the Connection goes with its gateway. It tells
// whether it changed conn.
func (a *Agent) connectionMeta(conn *netv1beta1.Connection) bool {
	changed := false
	if !a.handshakeSeen.IsZero() {
		at := a.handshakeSeen.UTC().Format(time.RFC3339)
		if conn.Annotations[consts.LastHandshakeAnnotation] != at {
			metav1.SetMetaDataAnnotation(&conn.ObjectMeta, consts.LastHandshakeAnnotation, at)
			changed = true
		}
	}
	if a.gateway == nil {
		return changed
	}
	if id := a.gateway.GetLabels()[consts.RemoteClusterIDLabel]; id != "" && conn.Labels[consts.RemoteClusterIDLabel] != id {
		if conn.Labels == nil {
			conn.Labels = map[string]string{}
		}
		conn.Labels[consts.RemoteClusterIDLabel] = id
		changed = true
	}
	if uid := a.gateway.GetUID(); uid != "" && metav1.GetControllerOfNoCopy(conn) == nil {
		kind := "GatewayServer"
		if a.opts.Mode == ModeClient {
			kind = "GatewayClient"
		}
		// Not blocking the owner's deletion: that would need update rights on the gateway's
		// finalizers where the OwnerReferencesPermissionEnforcement admission plugin runs.
		conn.OwnerReferences = append(conn.OwnerReferences, metav1.OwnerReference{APIVersion: netv1beta1.GroupVersion.String(),
			Kind: kind, Name: a.gateway.GetName(), UID: uid, Controller: ptr.To(true)})
		changed = true
	}
	return changed
}

func (a *Agent) newConnection() *netv1beta1.Connection {
	typ, kind := netv1beta1.ConnectionTypeServer, "GatewayServer"
	if a.opts.Mode == ModeClient {
		typ, kind = netv1beta1.ConnectionTypeClient, "GatewayClient"
	}
	ref := corev1.ObjectReference{APIVersion: netv1beta1.GroupVersion.String(), Kind: kind, Namespace: a.opts.Namespace, Name: a.opts.GatewayName}
	if a.gateway != nil {
		ref.UID = a.gateway.GetUID()
	}
	return &netv1beta1.Connection{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.opts.Namespace, Name: a.opts.ConnectionName},
		Spec:       netv1beta1.ConnectionSpec{Type: typ, GatewayRef: ref},
	}
}

// shutdown removes what the agent made on the host and marks the Connection as not connected.
func (a *Agent) shutdown() error {
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if a.status == netv1beta1.Connected {
		if err := a.putStatus(ctx, netv1beta1.Connecting, 0); err != nil {
			errs = append(errs, err)
		}
	}
	if a.responder != nil {
		errs = append(errs, a.responder.Close())
	}
	if a.rules != nil {
		errs = append(errs, a.rules.Remove())
	}
	if a.dev != nil {
		a.dev.Close() // the interface goes, and its routes with it
	}
	a.log.Info("gateway stopped, interface and rules removed")
	return errors.Join(errs...)
}
