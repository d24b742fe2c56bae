// Package reflection is the machinery the namespace-scoped reflectors of a virtual node share:
// for every namespace the node offloads (as its namespace mapper says), a set of informers on
// the consumer's and the provider's namespace, started when the namespace starts being
// offloaded and stopped when it stops; one work queue of keys fed by those informers; workers
// that reconcile keys once both sides' caches are synced. Nothing polls: keys come from watch
// events, and once more for everything cached when a namespace's caches are synced.
package reflection

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
)

// Key is one thing to reconcile: a kind (the reflector's own numbering), the local namespace
// and a name (whose meaning is the reflector's).
type Key struct {
	Kind      int
	Namespace string
	Name      string
}

// Namespace is one offloaded namespace being reflected.
type Namespace struct {
	// Local and Remote are its names on the consumer and on the provider.
	Local, Remote string
	// Ctx ends when the namespace stops being reflected.
	Ctx context.Context
	// LocalInf and RemoteInf are its informers on each side, by a name the reflector chooses.
	LocalInf, RemoteInf map[string]cache.SharedIndexInformer

	cancel    context.CancelFunc
	informers sync.WaitGroup
	synced    atomic.Bool
}

// Loop is the shared part of a namespace-scoped reflector.
type Loop struct {
	// Name names the reflector in logs and the queue.
	Name string
	// Workers reconcile keys in parallel (at least 1).
	Workers int
	// Setup creates the informers of a namespace in ns.LocalInf and ns.RemoteInf, with event
	// handlers that call enqueue; the Loop starts them.
	Setup func(ns *Namespace, enqueue func(Key)) error
	// Reconcile handles one key of a namespace whose caches are synced.
	Reconcile func(ctx context.Context, ns *Namespace, k Key) error
	// Resync enqueues every key a namespace's caches hold, once they are synced.
	Resync func(ns *Namespace, enqueue func(Key))
}

// loopRun is one Run of a Loop.
type loopRun struct {
	*Loop
	env   *vnode.Env
	log   logr.Logger
	queue workqueue.TypedRateLimitingInterface[Key]

	mu         sync.Mutex
	namespaces map[string]*Namespace // by local name
	stopping   sync.WaitGroup        // namespaces whose informers are stopping
}

// Run reflects the offloaded namespaces of env's virtual node until ctx ends.
func (l *Loop) Run(ctx context.Context, env *vnode.Env) error {
	if env == nil || env.Namespaces == nil || env.Local == nil || env.Remote == nil {
		return errors.New(l.Name + " reflector: the virtual node's Env lacks clients or its namespace mapper")
	}
	r := &loopRun{Loop: l, env: env, log: env.Log.WithValues("reflector", l.Name),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[Key](),
			workqueue.TypedRateLimitingQueueConfig[Key]{Name: l.Name + "-" + env.NodeName}),
		namespaces: map[string]*Namespace{}}
	var wg sync.WaitGroup
	for range max(l.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r.next() {
			}
		}()
	}
	// The mapper cannot unsubscribe: once this run ends, the callback does nothing.
	env.Namespaces.Subscribe(func(c namespaces.Change) {
		if ctx.Err() != nil {
			return
		}
		if c.Offloaded {
			r.start(ctx, c.Local, c.Remote)
		} else {
			r.stop(c.Local, c.Remote)
		}
	})
	<-ctx.Done()
	r.mu.Lock()
	for _, ns := range r.namespaces {
		r.stopLocked(ns)
	}
	r.mu.Unlock()
	r.queue.ShutDown()
	wg.Wait()
	r.stopping.Wait()
	return nil
}

// start begins reflecting local into remote (ending a reflection of local into another remote
// namespace first).
func (r *loopRun) start(ctx context.Context, local, remote string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.namespaces[local]; ok {
		if cur.Remote == remote {
			return
		}
		r.stopLocked(cur)
	}
	nctx, cancel := context.WithCancel(ctx)
	ns := &Namespace{Local: local, Remote: remote, Ctx: nctx, cancel: cancel,
		LocalInf: map[string]cache.SharedIndexInformer{}, RemoteInf: map[string]cache.SharedIndexInformer{}}
	log := r.log.WithValues("namespace", local, "remoteNamespace", remote)
	if err := r.Setup(ns, r.queue.Add); err != nil {
		cancel()
		log.Error(err, "not reflecting the namespace")
		return
	}
	var synced []cache.InformerSynced
	for side, infs := range map[string]map[string]cache.SharedIndexInformer{"local": ns.LocalInf, "remote": ns.RemoteInf} {
		for name, inf := range infs {
			_ = inf.SetTransform(stripManagedFields)
			_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
				if nctx.Err() == nil {
					log.Error(err, "watch failed; retrying", "informer", name, "side", side)
				}
			})
			ns.informers.Add(1)
			go func() {
				defer ns.informers.Done()
				inf.RunWithContext(nctx)
			}()
			synced = append(synced, inf.HasSynced)
		}
	}
	r.namespaces[local] = ns
	ns.informers.Add(1)
	go func() {
		defer ns.informers.Done()
		if !cache.WaitForCacheSync(nctx.Done(), synced...) {
			return
		}
		ns.synced.Store(true)
		log.V(1).Info("reflecting namespace")
		r.Resync(ns, r.queue.Add)
	}()
}

// stop ends the reflection of local into remote, if it is the current one.
func (r *loopRun) stop(local, remote string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.namespaces[local]; ok && cur.Remote == remote {
		r.stopLocked(cur)
	}
}

func (r *loopRun) stopLocked(ns *Namespace) {
	ns.cancel()
	delete(r.namespaces, ns.Local)
	r.stopping.Add(1)
	go func() {
		defer r.stopping.Done()
		ns.informers.Wait()
		r.log.V(1).Info("stopped reflecting namespace", "namespace", ns.Local, "remoteNamespace", ns.Remote)
	}()
}

// active returns the namespace being reflected, if its caches are synced.
func (r *loopRun) active(local string) (*Namespace, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ns, ok := r.namespaces[local]
	if !ok || !ns.synced.Load() {
		return nil, false
	}
	return ns, true
}

// next reconciles one key; false once the queue shut down.
func (r *loopRun) next() bool {
	k, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	defer r.queue.Done(k)
	ns, ok := r.active(k.Namespace)
	if !ok {
		// Not (or no longer) reflected, or not synced yet: the sync enqueues everything again.
		r.queue.Forget(k)
		return true
	}
	if err := r.Reconcile(ns.Ctx, ns, k); err != nil {
		if ns.Ctx.Err() == nil {
			r.log.Error(err, "reflecting; will retry", "kind", k.Kind, "namespace", k.Namespace, "name", k.Name)
		}
		r.queue.AddRateLimited(k)
		return true
	}
	r.queue.Forget(k)
	return true
}

// Handler returns event handlers that enqueue, for every object an informer hears of, the
// keys keys returns (updates that change nothing, such as resyncs, are ignored).
func Handler(enqueue func(Key), keys func(obj any) []Key) cache.ResourceEventHandler {
	add := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		for _, k := range keys(obj) {
			enqueue(k)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: add,
		UpdateFunc: func(old, obj any) {
			if o, n := Meta(old), Meta(obj); o != nil && n != nil && o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			add(obj)
		},
		DeleteFunc: add,
	}
}

// Cached returns the object of that name an informer holds in namespace ns.
func Cached[T any](inf cache.SharedIndexInformer, ns, name string) (T, bool) {
	var zero T
	if inf == nil {
		return zero, false
	}
	obj, ok, err := inf.GetStore().GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return zero, false
	}
	t, ok := obj.(T)
	return t, ok
}

// Names returns the names of the objects an informer holds (all in one namespace).
func Names(inf cache.SharedIndexInformer) []string {
	if inf == nil {
		return nil
	}
	return namesOf(inf.GetStore().ListKeys())
}

// IndexedNames returns the names of the objects an informer's index files under value.
func IndexedNames(inf cache.SharedIndexInformer, index, value string) []string {
	if inf == nil {
		return nil
	}
	keys, err := inf.GetIndexer().IndexKeys(index, value)
	if err != nil {
		return nil
	}
	return namesOf(keys)
}

func namesOf(keys []string) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if _, name, err := cache.SplitMetaNamespaceKey(k); err == nil {
			out = append(out, name)
		}
	}
	return out
}

// Meta returns obj's metadata, or nil when it is no API object.
func Meta(obj any) metav1.Object {
	m, _ := obj.(metav1.Object)
	return m
}

// stripManagedFields keeps the informers' caches small.
func stripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// Default request limits of the clients a reflector makes for itself (client-go's own
// default, 5 per second, would make reflecting a namespace of many objects take minutes).
const (
	DefaultQPS   = 200
	DefaultBurst = 400
)

// Tuned returns a copy of env whose Local and Remote clients are the own of the reflector
// named reflector, built from LocalConfig and RemoteConfig with the given request limits
// (defaults when zero), so that reflectors do not share one client's rate limit. Without the
// configs, env's clients stay. Its errors (a nil env, a client it cannot build) name the
// reflector.
func Tuned(reflector string, env *vnode.Env, qps float32, burst int) (*vnode.Env, error) {
	if env == nil {
		return nil, errors.New(reflector + " reflector: no virtual node Env")
	}
	if qps <= 0 {
		qps = DefaultQPS
	}
	if burst <= 0 {
		burst = DefaultBurst
	}
	out := *env
	for _, c := range []struct {
		cfg    *rest.Config
		client *kubernetes.Interface
		side   string
	}{{env.LocalConfig, &out.Local, "consumer"}, {env.RemoteConfig, &out.Remote, "provider"}} {
		if c.cfg == nil {
			continue
		}
		cfg := rest.CopyConfig(c.cfg)
		cfg.QPS, cfg.Burst = qps, burst
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s reflector: client of the %s cluster: %w", reflector, c.side, err)
		}
		*c.client = cs
	}
	return &out, nil
}
