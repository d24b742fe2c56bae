package objects

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode/reflection"
)

// Write-only kinds (Secrets) are reflected without reading the provider: the consumer's user
// may create, update and delete Secrets in its remote namespaces but not get, list or watch
// them (clusteridentity's liqo-remote-workload ClusterRole), and the provider's admission
// policy consts.ReflectedSecretsPolicy refuses its writes to Secrets that are not its copies.
//
// So there is no remote informer. Each time the local object changes, its copy is written
// whole (an unconditional update, or a create when there is none; an unchanged update is a
// no-op on the server); a local object gone or opted out has its copy deleted by name. The
// names of the copies are recorded, before they are created, in a ledger: a ConfigMap in the
// remote namespace (SecretLedgerConfigMap for Secrets), which the consumer may read. When a
// namespace starts being reflected (and every Reflector.SecretRefresh) the ledger's names that
// have no local object to reflect are reconciled, which deletes the copies whose local object
// went while the reflector was down. Copies changed or deleted on the provider, which the
// reflector cannot see, are put back at the next local change and every SecretRefresh, when
// every copy is written again.

// SecretLedgerConfigMap is the ConfigMap in each remote namespace where the reflector records
// the names of the Secrets it reflected there (as data keys). A local ConfigMap of that name is
// not reflected.
const SecretLedgerConfigMap = "liqo-reflected-secrets" //nolint:gosec // a ConfigMap's name, not a credential

// DefaultSecretRefresh is how often, unless told otherwise, every reflected Secret is written
// again (without a change, the write is a no-op on the server).
const DefaultSecretRefresh = 10 * time.Minute

// sweepKey is the name of the key that reconciles the names of a namespace's ledger that have
// no local object to reflect.
const sweepKey = ""

// ledger is the record of the copies of one write-only kind in one remote namespace.
type ledger struct {
	name, namespace string // the ConfigMap
	consumer        string
	cs              kubernetes.Interface
	// enqueue reconciles a local name of the kind.
	enqueue func(local string)

	mu     sync.Mutex
	loaded bool
	names  map[string]struct{} // remote names
	// written is the resource version of each copy as last written by this run: an unchanged
	// write (a refresh) answers with the same one.
	written map[string]string
	// fresh are the names this run recorded and whose copies it has not written yet.
	fresh map[string]struct{}
	// next gathers the changes to write after the patch in flight, if flushing.
	next     *batch
	flushing bool
	// pending are the names being recorded, by the batch that records them.
	pending map[string]*batch
}

// load reads the ledger once; until it succeeds, every call tries again.
func (l *ledger) load(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loaded {
		return nil
	}
	cm, err := l.cs.CoreV1().ConfigMaps(l.namespace).Get(ctx, l.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{}
	case err != nil:
		return errorf(err, "reading the ledger %s/%s on the provider", l.namespace, l.name)
	}
	l.names = make(map[string]struct{}, len(cm.Data))
	l.written = map[string]string{}
	l.fresh = map[string]struct{}{}
	l.pending = map[string]*batch{}
	for name := range cm.Data {
		l.names[name] = struct{}{}
	}
	l.loaded = true
	return nil
}

// has says whether a copy of that name is recorded.
func (l *ledger) has(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.names[name]
	return ok
}

// list returns the recorded names.
func (l *ledger) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Collect(maps.Keys(l.names))
}

// add records name, with the names in others that are not recorded yet (before their copies
// are created); until written, they are fresh.
func (l *ledger) add(ctx context.Context, name string, others []string) error {
	return l.change(ctx, name, true, others)
}

// remove forgets a name (once its copy is gone, or turned out not to be ours).
func (l *ledger) remove(ctx context.Context, name string) error {
	if !l.has(name) {
		return nil
	}
	return l.change(ctx, name, false, nil)
}

// isFresh says whether this run recorded the name and has not written its copy yet (so it
// most likely does not exist).
func (l *ledger) isFresh(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.fresh[name]
	return ok
}

// wrote notes the resource version a write of a copy answered with, and says whether it
// changed anything.
func (l *ledger) wrote(name, version string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.fresh, name)
	changed := l.written[name] != version
	l.written[name] = version
	return changed
}

// batch is changes to a ledger written in one patch.
type batch struct {
	ops  map[string]any // name: "" to record it, nil to forget it
	done chan struct{}  // closed once written (or not: err)
	err  error
}

// change records (add, with the others not recorded yet) or forgets a name on the server and
// returns once written. Changes are group-committed: while one worker writes a patch, the
// changes other workers ask for gather into the next one, which the same worker writes next
// (a merge patch of the keys, applied by the server to the current ConfigMap); a name already
// on its way is waited for. One object written by every worker would otherwise be a hot spot
// of conflicts, and a burst of new objects would cost a ledger write each.
func (l *ledger) change(ctx context.Context, name string, add bool, others []string) error {
	l.mu.Lock()
	if add {
		if _, ok := l.names[name]; ok {
			l.mu.Unlock()
			return nil
		}
		if b, ok := l.pending[name]; ok {
			l.mu.Unlock()
			return l.wait(ctx, b)
		}
	}
	if l.next == nil {
		l.next = &batch{ops: map[string]any{}, done: make(chan struct{})}
	}
	mine := l.next
	if !add {
		mine.ops[name] = nil
	} else {
		for _, n := range append([]string{name}, others...) {
			_, recorded := l.names[n]
			if _, pending := l.pending[n]; !recorded && !pending {
				mine.ops[n] = ""
				l.pending[n] = mine
			}
		}
	}
	if l.flushing {
		l.mu.Unlock()
		return l.wait(ctx, mine)
	}
	// Write batches until none is left: the other workers of the namespace wait for theirs.
	l.flushing = true
	for l.next != nil {
		b := l.next
		l.next = nil
		l.mu.Unlock()
		b.err = l.patch(ctx, b.ops)
		l.mu.Lock()
		for n, v := range b.ops {
			if v != nil {
				delete(l.pending, n)
			}
			switch {
			case b.err != nil:
			case v == nil:
				delete(l.names, n)
				delete(l.written, n)
				delete(l.fresh, n)
			default:
				l.names[n] = struct{}{}
				l.fresh[n] = struct{}{}
			}
		}
		close(b.done)
	}
	l.flushing = false
	l.mu.Unlock()
	return mine.err
}

// wait waits for a batch to be written.
func (l *ledger) wait(ctx context.Context, b *batch) error {
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return fmt.Errorf("waiting to write the ledger %s/%s: %w", l.namespace, l.name, ctx.Err())
	}
}

// patch writes changes to the ledger, creating it if need be.
func (l *ledger) patch(ctx context.Context, ops map[string]any) error {
	body, err := json.Marshal(map[string]any{"data": ops})
	if err != nil {
		return fmt.Errorf("encoding a ledger patch: %w", err)
	}
	added := map[string]string{}
	for n, v := range ops {
		if v != nil {
			added[n] = ""
		}
	}
	cms := l.cs.CoreV1().ConfigMaps(l.namespace)
	for range 3 { // a create racing another reflector's ends in AlreadyExists: patch again
		_, err = cms.Patch(ctx, l.name, types.MergePatchType, body, metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			break
		}
		if len(added) == 0 {
			return nil // no ledger, nothing to forget
		}
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: l.name, Namespace: l.namespace,
				// Not consts.ReflectedLabel: this is no copy of a local ConfigMap.
				Labels: map[string]string{consts.OriginClusterIDLabel: l.consumer}},
			Data: added,
		}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	if err != nil {
		return errorf(err, "writing %d names to the ledger %s/%s on the provider", len(ops), l.namespace, l.name)
	}
	return nil
}

// ledgerKey identifies a ledger of a run: one per kind and reflected namespace (a namespace
// reflected anew, maybe into another remote namespace, starts from its ledger on the provider).
type ledgerKey struct {
	ns       *reflection.Namespace
	resource string
}

// ledgerOf returns the ledger of a write-only kind in a namespace (made by setup).
func (rn *run) ledgerOf(ns *reflection.Namespace, resource string) *ledger {
	l, _ := rn.ledgers.Load(ledgerKey{ns, resource})
	led, _ := l.(*ledger)
	return led
}

// setupWriteOnly makes the ledger of a write-only kind in a namespace, forgotten when the
// namespace stops being reflected, and the periodic refresh of its copies.
func (rn *run) setupWriteOnly(ns *reflection.Namespace, i int, k handler, enqueue func(reflection.Key)) {
	key := ledgerKey{ns, k.resource()}
	rn.ledgers.Store(key, &ledger{name: k.ledgerName(), namespace: ns.Remote, consumer: string(rn.env.ConsumerID), cs: rn.env.Remote,
		enqueue: func(local string) { enqueue(reflection.Key{Kind: i, Namespace: ns.Local, Name: local}) }})
	context.AfterFunc(ns.Ctx, func() { rn.ledgers.Delete(key) })
	if rn.refresh <= 0 {
		return
	}
	go func() {
		t := time.NewTicker(rn.refresh)
		defer t.Stop()
		for {
			select {
			case <-ns.Ctx.Done():
				return
			case <-t.C:
				rn.resyncKind(ns, i, k, enqueue)
			}
		}
	}()
}

// reconcileWriteOnly makes the copy of the local object name match it without reading the
// provider; name sweepKey reconciles the names of the ledger that have no local object to
// reflect.
func (k *kind[L, R]) reconcileWriteOnly(ctx context.Context, rn *run, ns *reflection.Namespace, name string) error {
	led := rn.ledgerOf(ns, k.plural)
	if led == nil {
		return nil // the namespace stopped being reflected
	}
	if err := led.load(ctx); err != nil {
		return err
	}
	if name == sweepKey {
		// The copies whose local object is gone or opted out; the others are reflected through
		// their own keys.
		for _, remote := range led.list() {
			l := k.localName(remote)
			if l == "" {
				continue
			}
			if obj, ok := reflection.Cached[L](ns.LocalInf[k.plural], ns.Local, l); ok && k.skipReason(ns, obj) == "" {
				continue
			}
			led.enqueue(l)
		}
		return nil
	}
	remoteName := k.remoteName(name)
	if remoteName == "" {
		return nil
	}
	local, hasLocal := reflection.Cached[L](ns.LocalInf[k.plural], ns.Local, name)
	reason := "deleted locally"
	if hasLocal {
		reason = k.skipReason(ns, local)
	}
	cl := k.remoteAPI(rn, ns.Remote)
	if reason != "" {
		if !led.has(remoteName) {
			return nil
		}
		err := cl.Delete(ctx, remoteName, metav1.DeleteOptions{})
		switch {
		case err == nil || apierrors.IsNotFound(err):
			rn.log.V(1).Info("deleted reflection", "resource", k.plural, "remoteNamespace", ns.Remote, "name", remoteName, "reason", reason)
		case deniedByPolicy(err):
			rn.log.Info("left alone: the provider's object of that name is not a copy from this cluster",
				"resource", k.plural, "remoteNamespace", ns.Remote, "name", remoteName)
		default:
			return errorf(err, "deleting %s %s/%s on the provider (%s)", k.plural, ns.Remote, remoteName, reason)
		}
		return led.remove(ctx, remoteName)
	}
	return k.write(ctx, rn, ns, cl, led, k.desired(rn.env, ns, local, remoteName))
}

// write puts want on the provider, whatever is there: an update, or a create when there is
// nothing (the ledger says which to try first). A field that cannot change (a Secret's type, an
// immutable Secret's data) makes it replace the copy. A refusal by the provider's admission
// policy means the object of that name is not ours: it is left alone.
func (k *kind[L, R]) write(ctx context.Context, rn *run, rns *reflection.Namespace, cl api[R], led *ledger, want R) error {
	name, ns := want.GetName(), want.GetNamespace()
	if !led.has(name) {
		if err := led.add(ctx, name, k.toRecord(rns, led, name)); err != nil {
			return err
		}
	}
	var got R
	var err error
	created := false
	if led.isFresh(name) {
		if got, err = cl.Create(ctx, want, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			got, err = cl.Update(ctx, want, metav1.UpdateOptions{})
		} else {
			created = true
		}
	} else {
		if got, err = cl.Update(ctx, want, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
			got, err = cl.Create(ctx, want, metav1.CreateOptions{})
			created = true
		}
	}
	if apierrors.IsInvalid(err) && !created {
		rn.log.V(1).Info("replacing reflection: a field that cannot change did", "resource", k.plural, "remoteNamespace", ns, "name", name)
		if err = cl.Delete(ctx, name, metav1.DeleteOptions{}); err == nil || apierrors.IsNotFound(err) {
			got, err = cl.Create(ctx, want, metav1.CreateOptions{})
		}
	}
	switch {
	case err == nil:
		if led.wrote(name, got.GetResourceVersion()) {
			rn.log.V(1).Info("reflected", "resource", k.plural, "remoteNamespace", ns, "name", name)
		}
		return nil
	case deniedByPolicy(err):
		rn.log.Info("not reflected: the provider has an object of that name that is not a copy from this cluster; rename one of them",
			"resource", k.plural, "remoteNamespace", ns, "name", name)
		return led.remove(ctx, name)
	default:
		return errorf(err, "writing %s %s/%s on the provider", k.plural, ns, name)
	}
}

// maxRecordBatch bounds how many names toRecord returns.
const maxRecordBatch = 500

// toRecord returns, so that a burst of new local objects costs a few ledger writes rather than
// one each, the remote names of other local objects to reflect than remoteName whose copies are
// not recorded yet (up to maxRecordBatch).
func (k *kind[L, R]) toRecord(ns *reflection.Namespace, led *ledger, remoteName string) []string {
	var out []string
	for _, obj := range ns.LocalInf[k.plural].GetStore().List() {
		if len(out) >= maxRecordBatch {
			break
		}
		o, ok := obj.(L)
		if !ok {
			continue
		}
		if r := k.remoteName(o.GetName()); r != "" && r != remoteName && !led.has(r) && k.skipReason(ns, o) == "" {
			out = append(out, r)
		}
	}
	return out
}

// deniedByPolicy says whether the provider's admission policy refused a write because the
// object is not a copy from this consumer.
func deniedByPolicy(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+consts.ReflectedSecretsPolicy+"'")
}
