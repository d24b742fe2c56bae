// Package objects reflects what offloaded pods need besides themselves: the ConfigMaps,
// Secrets, Services and EndpointSlices of every namespace a virtual node offloads are copied
// into the provider's namespace mapped to it, and kept equal to their local originals.
//
// One generic implementation serves every kind (kind[T]); a kind only says how its content is
// forged and compared. For each offloaded namespace the reflector runs two informers per kind
// (through vnode/reflection): one on the consumer's namespace (every object) and one on the
// provider's namespace (only the copies this consumer made, selected by consts.ReflectedLabel
// and consts.OriginClusterIDLabel). Events on either side put the local name of the object into
// one work queue, whose workers create, update or delete the remote copy; a copy changed or
// deleted on the provider is put back. Objects on the provider without both labels are never
// touched. When a namespace stops being offloaded its informers stop; its remote copies are
// left to the remote namespace's deletion.
//
// Secrets are the exception: the consumer may write them on the provider but not read them, so
// they have no remote informer and are reflected write-only, their copies recorded in a ledger
// ConfigMap (writeonly.go). EndpointSlices are copied as ShadowEndpointSlices (offloading.liqo.io,
// as upstream Liqo's virtual kubelet does; endpointslices.go), of which the provider makes the
// EndpointSlices: the consumer may not write EndpointSlices there.
//
// Which objects are reflected (policy.go): never those annotated liqo.io/skip-reflection (with
// any value but "false"), nor copies reflected here from elsewhere; under a kind's AllowList
// policy, only those annotated liqo.io/allow-reflection (the root CA ConfigMap always, unless
// opted out); EndpointSlices follow their Service. An object that stops being reflected has its
// copy deleted.
//
// Ingresses are reflected the same way by IngressReflector (ingress.go), which runs apart.
package objects

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/reflection"
)

// DefaultWorkers is how many objects a Reflector reconciles in parallel unless told otherwise.
const DefaultWorkers = 4

// Reflector reflects ConfigMaps, Secrets, Services and EndpointSlices of the offloaded
// namespaces of one virtual node to the provider. It implements vnode.Reflector.
type Reflector struct {
	// Workers reconcile objects in parallel. Default DefaultWorkers.
	Workers int
	// QPS and Burst limit the reflector's requests to each cluster. Default
	// reflection.DefaultQPS and reflection.DefaultBurst.
	QPS   float32
	Burst int
	// SecretRefresh is how often every reflected Secret is written again, which puts back a
	// copy changed or deleted on the provider (the reflector cannot watch Secrets there).
	// Default DefaultSecretRefresh; negative: never.
	SecretRefresh time.Duration
	// Policies are the reflection policies of ConfigMaps, Secrets and Services (EndpointSlices
	// follow their Service); DenyList for a kind not in it.
	Policies Policies
}

var _ vnode.Reflector = (*Reflector)(nil)

// New returns a Reflector for ConfigMaps, Secrets, Services and EndpointSlices.
func New() *Reflector { return &Reflector{} }

// Name names the reflector in logs.
func (r *Reflector) Name() string { return "objects" }

// run is one Run of a Reflector.
type run struct {
	env   *vnode.Env
	kinds []handler
	log   logr.Logger
	// refresh is Reflector.SecretRefresh with its default (<= 0: never).
	refresh time.Duration
	// ledgers holds the ledgers of write-only kinds, by ledgerKey.
	ledgers sync.Map
	// offloading is the provider's offloading.liqo.io/v1beta1 REST client, for kinds whose copies
	// are of that API (nil when none is).
	offloading rest.Interface
}

// Run reflects until ctx ends.
func (r *Reflector) Run(ctx context.Context, env *vnode.Env) error {
	if err := r.Policies.Validate(); err != nil {
		return fmt.Errorf("%s reflector: %w", r.Name(), err)
	}
	p := r.Policies
	kinds := []handler{configMaps(p.Of(ResourceConfigMap)), secrets(p.Of(ResourceSecret)),
		services(p.Of(ResourceService)), endpointSlices(p.Of(ResourceService))}
	refresh := r.SecretRefresh
	if refresh == 0 {
		refresh = DefaultSecretRefresh
	}
	return runKinds(ctx, env, r.Name(), limits{workers: r.Workers, qps: r.QPS, burst: r.Burst}, refresh, kinds)
}

// limits are a reflector's workers and request limits (zero: the defaults).
type limits struct {
	workers int
	qps     float32
	burst   int
}

// runKinds reflects kinds, as the reflector named name, until ctx ends; refresh is how often
// write-only kinds are written again (<= 0: never).
func runKinds(ctx context.Context, env *vnode.Env, name string, l limits, refresh time.Duration, kinds []handler) error {
	env, err := reflection.Tuned(name, env, l.qps, l.burst)
	if err != nil {
		return err
	}
	rn := &run{env: env, kinds: kinds, log: env.Log.WithValues("reflector", name), refresh: refresh}
	if slices.ContainsFunc(kinds, handler.offloading) {
		if rn.offloading, err = reflection.RESTClient(env.RemoteConfig, offv1beta1.GroupVersion, l.qps, l.burst); err != nil {
			return fmt.Errorf("%s reflector: the provider's %w", name, err)
		}
	}
	workers := l.workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	loop := &reflection.Loop{Name: name, Workers: workers, Setup: rn.setup, Resync: rn.resync,
		Reconcile: func(ctx context.Context, ns *reflection.Namespace, k reflection.Key) error {
			return rn.kinds[k.Kind].reconcile(ctx, rn, ns, k.Name)
		}}
	return loop.Run(ctx, env)
}

// setup creates, for each kind, an informer on the local namespace and one on the remote
// namespace's copies of this consumer (the ledger instead for write-only kinds); both enqueue
// the local name of what changed.
func (rn *run) setup(ns *reflection.Namespace, enqueue func(reflection.Key)) error {
	remoteSelector := labels.SelectorFromSet(labels.Set{consts.ReflectedLabel: "true",
		consts.OriginClusterIDLabel: string(rn.env.ConsumerID)}).String()
	for i, k := range rn.kinds {
		li := k.newInformer(rn.env.Local, ns.Local, k.localFilter)
		ns.LocalInf[k.resource()] = li
		keys := func(rename func(string) string) func(any) []reflection.Key {
			return func(obj any) []reflection.Key {
				m := reflection.Meta(obj)
				if m == nil {
					return nil
				}
				if name := rename(m.GetName()); name != "" {
					return []reflection.Key{{Kind: i, Namespace: ns.Local, Name: name}}
				}
				return nil
			}
		}
		if _, err := li.AddEventHandler(reflection.Handler(enqueue, keys(func(n string) string { return n }))); err != nil {
			return fmt.Errorf("watching local %s: %w", k.resource(), err)
		}
		if k.ledgerName() != "" {
			rn.setupWriteOnly(ns, i, k, enqueue)
			continue
		}
		ri := k.newRemoteInformer(rn, ns.Remote, func(o *metav1.ListOptions) { o.LabelSelector = remoteSelector })
		ns.RemoteInf[k.resource()] = ri
		if _, err := ri.AddEventHandler(reflection.Handler(enqueue, keys(k.localName))); err != nil {
			return fmt.Errorf("watching remote %s: %w", k.resource(), err)
		}
	}
	// Kinds that depend on objects of another kind (EndpointSlices on their Service) hear of
	// those changes too.
	for i, k := range rn.kinds {
		dep, names := k.related()
		inf, ok := ns.LocalInf[dep]
		if !ok || names == nil {
			continue
		}
		h := reflection.Handler(enqueue, func(obj any) []reflection.Key {
			var out []reflection.Key
			for _, n := range names(ns, obj) {
				out = append(out, reflection.Key{Kind: i, Namespace: ns.Local, Name: n})
			}
			return out
		})
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("watching local %s for %s: %w", dep, k.resource(), err)
		}
	}
	return nil
}

// resync enqueues everything known on either side: local objects to reflect, remote copies
// whose original may be gone.
func (rn *run) resync(ns *reflection.Namespace, enqueue func(reflection.Key)) {
	for i, k := range rn.kinds {
		rn.resyncKind(ns, i, k, enqueue)
	}
}

// resyncKind enqueues everything of one kind known on either side (for a write-only kind, the
// key that reconciles the names in its ledger).
func (rn *run) resyncKind(ns *reflection.Namespace, i int, k handler, enqueue func(reflection.Key)) {
	for _, name := range reflection.Names(ns.LocalInf[k.resource()]) {
		enqueue(reflection.Key{Kind: i, Namespace: ns.Local, Name: name})
	}
	if k.ledgerName() != "" {
		enqueue(reflection.Key{Kind: i, Namespace: ns.Local, Name: sweepKey})
		return
	}
	for _, name := range reflection.Names(ns.RemoteInf[k.resource()]) {
		if l := k.localName(name); l != "" {
			enqueue(reflection.Key{Kind: i, Namespace: ns.Local, Name: l})
		}
	}
}

// errorf wraps an API error with the object it concerns.
func errorf(err error, format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, err)...)
}
