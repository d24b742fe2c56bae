// Package peering does what the CLI's `peer` and `unpeer` commands do (seed 001), across two
// clusters reached with admin clients: tenant namespaces on both sides, the network (each
// side's Configuration of the other, gateway server on the provider and client on the
// consumer, public keys exchanged, both Connections awaited), the authentication handshake
// (nonce, signed nonce, Tenant, the consumer's Identity) and the offloading (a ResourceSlice,
// its virtual node awaited Ready). Each step is idempotent, so Peer converges from any partial
// state, and Unpeer removes what Peer made in reverse order, keeping the network and tenant
// namespaces while a peering in the other direction still uses them.
//
// The in-cluster controllers do the work behind each object; this package only writes the
// objects a peering is made of and waits for their results.
package peering

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/clusterid"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// Cluster is one side of a peering.
type Cluster struct {
	// Name names the cluster in messages (e.g. its key in the Terraform provider's clusters map).
	Name string
	// Client reaches the cluster with enough rights to write the peering's objects.
	Client client.Client
	// LiqoNamespace is the namespace Liqo is installed in there: where its cluster ID and its
	// Networks are ("": consts.LiqoNamespace).
	LiqoNamespace string
}

// liqoNamespace is the namespace Liqo is installed in on c.
func (c Cluster) liqoNamespace() string {
	if c.LiqoNamespace == "" {
		return consts.LiqoNamespace
	}
	return c.LiqoNamespace
}

// Gateway are the parameters of the network tunnel.
type Gateway struct {
	// ServerOnConsumer puts the gateway server on the consumer and its client on the provider
	// (liqoctl's --gw-server-service-location Consumer); by default the provider hosts the
	// server. A tunnel between the two clusters that exists already (the other direction's) is
	// reused as it is, wherever its server is.
	ServerOnConsumer bool
	// ServiceType exposes the gateway server: LoadBalancer, NodePort or ClusterIP.
	ServiceType corev1.ServiceType
	// Port is the server's UDP port.
	Port int32
	// NodePort fixes the node port when ServiceType is NodePort (0: allocated).
	NodePort int32
	// LoadBalancerIP asks a LoadBalancer Service for this address ("": any).
	LoadBalancerIP string
	// ClientAddress and ClientPort, when set, replace the address and the port the server
	// reports in the endpoint the client dials: for a server behind NAT, whose Service does not
	// know the address it is reached at.
	ClientAddress string
	ClientPort    int32
	// MTU is the tunnel's MTU.
	MTU int
}

// ServerLocation names the side hosting the gateway server, as liqoctl's
// --gw-server-service-location does: Provider or Consumer.
func (g Gateway) ServerLocation() string {
	if g.ServerOnConsumer {
		return string(corev1beta1.ConsumerRole)
	}
	return string(corev1beta1.ProviderRole)
}

// Options say what a peering includes.
type Options struct {
	// Networking connects the two clusters' pod networks through the gateways.
	Networking bool
	// Gateway parameterises the tunnel when Networking is set.
	Gateway Gateway
	// InBand makes the consumer's control plane reach the provider's API server through the
	// tunnel (liqoctl peer --in-band): via the provider's API-server proxy, at its address in
	// the provider's external CIDR. It needs Networking.
	InBand bool
	// Resources are what the consumer asks of the provider.
	Resources corev1.ResourceList
	// SliceClass is the class of the ResourceSlice ("": default). The provider's controllers
	// grant the default class; a slice of another class waits for that class's controller.
	SliceClass authv1beta1.ResourceSliceClass
	// NoResourceSlice leaves the offloading out (liqoctl's --create-resource-slice=false): no
	// slice, so no virtual node; a slice made before is removed.
	NoResourceSlice bool
	// NoVirtualNode asks for the slice but no virtual node (--create-virtual-node=false): the
	// grant is awaited, and a virtual node made before is removed.
	NoVirtualNode bool
	// PodSecurity is the Pod Security level of the consumer's remote namespaces on the
	// provider, kept on the provider's Tenant (consts.TenantPodSecurityAnnotation); "": the
	// provider's default.
	PodSecurity string
	// Offer, when set, takes the resources on an offer of the provider: the consumer's Contract
	// (named as the slice) is written and signed before the slice asks, and the slice names it
	// (consts.ContractAnnotation), so the provider grants it by the contract. Unset: a Contract
	// made before is removed.
	Offer *Accept
	// PollInterval is how often the waits look (default 250ms).
	PollInterval time.Duration
}

// State is a peering as it is.
type State struct {
	// ConsumerID and ProviderID are the two clusters' IDs.
	ConsumerID, ProviderID corev1beta1.ClusterID
	// ConsumerTenantNamespace (on the consumer) and ProviderTenantNamespace (on the provider)
	// hold the peering's objects.
	ConsumerTenantNamespace, ProviderTenantNamespace string
	// VirtualNode is the consumer's Node that stands for the provider ("" before it exists).
	VirtualNode string
	// Networking, Authentication and Offloading are each module's state, as the ForeignClusters
	// report it (see observe): Disabled (networking left out), None, Pending, Established or
	// Ready, NotReady, SomeNotReady, or Error.
	Networking, Authentication, Offloading string
	// Granted are the resources the provider granted: those asked, and those it adds on its own
	// (its defaultNodeResources, e.g. ephemeral-storage where its nodes have some).
	Granted corev1.ResourceList
	// Asked are the resources the ResourceSlice asks for.
	Asked corev1.ResourceList
	// ResourceSlice tells whether the consumer's ResourceSlice of the peering exists; SliceClass
	// is its class, and VirtualNodeWanted whether it asks for a virtual node.
	ResourceSlice     bool
	SliceClass        authv1beta1.ResourceSliceClass
	VirtualNodeWanted bool
	// ServerOnConsumer tells that the tunnel's gateway server is on the consumer (meaningful
	// when the tunnel exists).
	ServerOnConsumer bool
	// Tunnel is the tunnel as found (nil when there is none, or networking is left out).
	Tunnel *Tunnel
	// ProxyURL is the proxy the consumer's control plane reaches the provider's API server
	// through, as the provider's Tenant records it ("" when it reaches it directly).
	ProxyURL string
	// PodSecurity is the consumer's Pod Security level as the provider's Tenant records it
	// ("": the provider's default).
	PodSecurity string
}

// Names of the objects a peering is made of, so that they can be found again (import, drift).
const (
	// IdentityPrefix + provider ID is the consumer's control-plane Identity.
	IdentityPrefix = "controlplane-"
)

// TenantNamespace is the tenant namespace a cluster keeps for the peer with the given ID.
func TenantNamespace(remote corev1beta1.ClusterID) string {
	return consts.TenantNamespace(string(remote))
}

// ClusterID reads a cluster's ID, recorded by its controller manager.
func ClusterID(ctx context.Context, c Cluster) (corev1beta1.ClusterID, error) {
	id, err := clusterid.Read(ctx, c.Client, c.liqoNamespace())
	if errors.Is(err, clusterid.ErrNotRecorded) {
		return "", fmt.Errorf("cluster %s has no cluster ID (%w): the liqo controller manager has not run there; install it "+
			"first, or set liqo_namespace to the namespace Liqo is installed in", c.Name, err)
	}
	if err != nil {
		return "", fmt.Errorf("reading the cluster ID of %s: %w", c.Name, err)
	}
	return id, nil
}

// pair is a peering being worked on.
type pair struct {
	consumer, provider     Cluster
	consumerID, providerID corev1beta1.ClusterID
	opts                   Options
}

func (p *pair) consumerNS() string { return TenantNamespace(p.providerID) }
func (p *pair) providerNS() string { return TenantNamespace(p.consumerID) }

func newPair(ctx context.Context, consumer, provider Cluster, opts Options) (*pair, error) {
	cid, err := ClusterID(ctx, consumer)
	if err != nil {
		return nil, err
	}
	pid, err := ClusterID(ctx, provider)
	if err != nil {
		return nil, err
	}
	if cid == pid {
		return nil, fmt.Errorf("clusters %s and %s have the same cluster ID %q: a cluster cannot peer with itself", consumer.Name, provider.Name, cid)
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 250 * time.Millisecond
	}
	return &pair{consumer: consumer, provider: provider, consumerID: cid, providerID: pid, opts: opts}, nil
}

// Peer makes the peering of consumer with provider, or brings it in line with opts, and
// waits until every module is up. It is idempotent; the context's deadline bounds it.
func Peer(ctx context.Context, consumer, provider Cluster, opts Options) (*State, error) {
	if opts.InBand && !opts.Networking {
		return nil, stop("an in-band peering reaches the provider's API server through the tunnel: it needs networking")
	}
	p, err := newPair(ctx, consumer, provider, opts)
	if err != nil {
		return nil, err
	}
	if err := p.ensureTenantNamespaces(ctx); err != nil {
		return nil, err
	}
	if opts.Networking {
		if err := p.ensureNetwork(ctx); err != nil {
			return nil, err
		}
	}
	if err := p.ensureAuthentication(ctx); err != nil {
		return nil, err
	}
	if opts.NoResourceSlice {
		err = p.removeOffloading(ctx)
	} else {
		err = p.ensureContractedOffloading(ctx)
	}
	if err != nil {
		return nil, err
	}
	return p.waitUp(ctx)
}

// Observe reports the state of the peering of consumer with provider; found is false when
// its defining objects (the Tenant and the ResourceSlice) are gone.
func Observe(ctx context.Context, consumer, provider Cluster, opts Options) (st *State, found bool, err error) {
	p, err := newPair(ctx, consumer, provider, opts)
	if err != nil {
		return nil, false, err
	}
	st, err = p.observe(ctx)
	if err != nil {
		return nil, false, err
	}
	return st, p.exists(ctx), nil
}

// Unpeer removes the peering: the slice (and so the virtual node, drained), the identity and
// the tenant, then, unless a peering in the other direction still uses them, the network and
// the tenant namespaces; it waits until they are gone.
func Unpeer(ctx context.Context, consumer, provider Cluster, opts Options) error {
	p, err := newPair(ctx, consumer, provider, opts)
	if err != nil {
		return err
	}
	if err := p.removeOffloading(ctx); err != nil {
		return err
	}
	if err := p.removeAuthentication(ctx); err != nil {
		return err
	}
	reverse, err := p.reverseExists(ctx)
	if err != nil {
		return err
	}
	if reverse {
		return nil // the network and the tenant namespaces serve the other direction
	}
	if err := p.removeNetwork(ctx); err != nil {
		return err
	}
	return p.removeTenantNamespaces(ctx)
}

// ensureTenantNamespaces creates the tenant namespace on each side.
func (p *pair) ensureTenantNamespaces(ctx context.Context) error {
	for _, side := range []struct {
		c      Cluster
		name   string
		remote corev1beta1.ClusterID
	}{{p.consumer, p.consumerNS(), p.providerID}, {p.provider, p.providerNS(), p.consumerID}} {
		ns := &corev1.Namespace{}
		err := side.c.Client.Get(ctx, client.ObjectKey{Name: side.name}, ns)
		switch {
		case apierrors.IsNotFound(err):
			ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: side.name}}
			forge.MutateTenantNamespace(ns, string(side.remote))
			if err := side.c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) { // made meanwhile: fine
				return fmt.Errorf("creating tenant namespace %s on %s: %w", side.name, side.c.Name, err)
			}
		case err != nil:
			return fmt.Errorf("reading tenant namespace %s on %s: %w", side.name, side.c.Name, err)
		case ns.DeletionTimestamp != nil:
			return fmt.Errorf("tenant namespace %s on %s is being deleted (an earlier unpeering); apply again once it is gone", side.name, side.c.Name)
		case !forge.IsTenantNamespaceOf(ns, string(side.remote)):
			return fmt.Errorf("namespace %s on %s exists but is not the tenant namespace of %s (labels %s=%s, %s=true): rename or remove it",
				side.name, side.c.Name, side.remote, consts.RemoteClusterIDLabel, side.remote, consts.TenantNamespaceLabel)
		}
	}
	return nil
}

// removeTenantNamespaces deletes both tenant namespaces at once and waits until they are gone.
func (p *pair) removeTenantNamespaces(ctx context.Context) error {
	sides := []struct {
		c    Cluster
		name string
	}{{p.consumer, p.consumerNS()}, {p.provider, p.providerNS()}}
	errs := make(chan error, len(sides))
	for _, side := range sides {
		go func() {
			errs <- deleteAndWait(ctx, side.c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: side.name}}, p.opts.PollInterval)
		}()
	}
	var all []error
	for range sides {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// deleteAndWait deletes obj (in the background: owned objects go with it) and waits until
// it is gone.
func deleteAndWait(ctx context.Context, c Cluster, obj client.Object, interval time.Duration) error {
	kind := fmt.Sprintf("%T", obj)
	err := c.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s %s on %s: %w", kind, client.ObjectKeyFromObject(obj), c.Name, err)
	}
	seen := "" // what held it at the last look that read it
	return waitGone(ctx, interval, fmt.Sprintf("%s %s on %s to be gone", kind, client.ObjectKeyFromObject(obj), c.Name), func(ctx context.Context) (bool, error) {
		err := c.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil && seen != "":
			// A read cut short (the wait's end, the client's rate limit) keeps what was seen.
			return false, fmt.Errorf("%s (then reading it failed: %w)", seen, err)
		case err != nil:
			return false, fmt.Errorf("reading it: %w", err)
		}
		seen = stillThere(obj)
		return false, errors.New(seen)
	})
}

// stillThere says what holds obj, deleted but still there: its finalizers and, for a
// namespace, what its deletion reports as remaining.
func stillThere(obj client.Object) string {
	what := "still there"
	if ts := obj.GetDeletionTimestamp(); ts != nil {
		what = "terminating since " + ts.UTC().Format(time.RFC3339)
	}
	if f := obj.GetFinalizers(); len(f) > 0 {
		what += ", held by the finalizers " + strings.Join(f, ", ")
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		for _, c := range ns.Status.Conditions {
			if c.Status == corev1.ConditionTrue && c.Message != "" {
				what += "; " + c.Message
			}
		}
	}
	return what
}

// firstGoneLook is how soon after a deletion waitGone looks again.
const firstGoneLook = 10 * time.Millisecond

// waitFor polls cond every interval until it holds, failing with what was awaited and the last
// reason when ctx ends.
func waitFor(ctx context.Context, interval time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	return waitEvery(ctx, wait.Backoff{Duration: interval}.DelayFunc(), what, cond)
}

// waitGone is waitFor for an object just deleted: most go within milliseconds (no finalizer, or
// one its controller releases at once), so it looks again after firstGoneLook, then doubles the
// pause up to interval. Each step of an unpeering waits for its object to be gone before the
// next begins, and a fixed interval would add half of it to each on average.
func waitGone(ctx context.Context, interval time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	backoff := wait.Backoff{Duration: min(firstGoneLook, interval), Factor: 2, Cap: interval, Steps: math.MaxInt32}
	return waitEvery(ctx, backoff.DelayFunc(), what, cond)
}

// waitEvery runs cond at once, then after each of delays' pauses, until it holds, failing with
// what was awaited and the last reason when ctx ends.
func waitEvery(ctx context.Context, delays wait.DelayFunc, what string, cond func(ctx context.Context) (bool, error)) error {
	defer ReportWait(ctx, what)()
	var last error
	err := delays.Until(ctx, true, false, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		var stop *stopError
		if errors.As(err, &stop) {
			return false, stop.err
		}
		if err == nil || ctx.Err() == nil || last == nil {
			last = err // a look cut short by the wait's end keeps the reason before it
		}
		return ok, nil
	})
	if err == nil {
		return nil
	}
	var stop *stopError
	if !errors.As(err, &stop) && ctx.Err() != nil {
		if last != nil {
			return fmt.Errorf("timed out waiting for %s (last: %w)", what, last)
		}
		return fmt.Errorf("timed out waiting for %s", what)
	}
	return err //nolint:wrapcheck // a stopError's own message, or the context's end, already says what was awaited
}

// stopError ends a wait at once: the awaited state will not come (a denial, a refusal).
type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }

func stop(format string, args ...any) error { return &stopError{err: fmt.Errorf(format, args...)} }
