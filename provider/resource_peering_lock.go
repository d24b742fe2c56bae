package provider

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

// peeringLocks serialise the operations on one pair of clusters within this provider process:
// the two directions of a bidirectional peering share the tenant namespaces and the tunnel, and
// Terraform creates and destroys them in parallel (each would find the shared objects half made
// or half gone).
var peeringLocks sync.Map // string → *pairLock

// pairLock is the lock of one pair of clusters, and what holds it.
type pairLock struct {
	ch chan struct{}

	mu      sync.Mutex
	op      string    // the holder's operation: create, update or delete
	of      string    // the peering it works on (peeringModel.describe)
	since   time.Time // when it took the lock
	waiting string    // what it waits for now ("" between its waits)
}

// lockPair takes the lock of the unordered pair of m's clusters for operation op (create,
// update, delete), or fails when ctx ends first, saying which operation of which peering held
// it, since when and what it was waiting for. The context it returns reports the holder's
// waits (peering.WithWaitReporter) for such a message.
func lockPair(ctx context.Context, set *clusterSet, m *peeringModel, op string) (context.Context, func(), error) {
	a, b := m.ConsumerCluster.ValueString(), m.ProviderCluster.ValueString()
	pair := []string{a, b}
	sort.Strings(pair)
	v, _ := peeringLocks.LoadOrStore(fmt.Sprintf("%p/%s/%s", set, pair[0], pair[1]), &pairLock{ch: make(chan struct{}, 1)})
	l, _ := v.(*pairLock)
	start := time.Now()
	select {
	case l.ch <- struct{}{}:
		l.mu.Lock()
		l.op, l.of, l.since, l.waiting = op, m.describe(), time.Now(), ""
		l.mu.Unlock()
		report := func(what string) {
			l.mu.Lock()
			l.waiting = what
			l.mu.Unlock()
		}
		return peering.WithWaitReporter(ctx, report), func() { <-l.ch }, nil
	case <-ctx.Done():
		return ctx, nil, fmt.Errorf("waited %s for another operation on the peering of %q and %q, until this %s's timeout: %s (%w). "+
			"Operations on one pair of clusters run one at a time (the two directions of a bidirectional peering share the "+
			"tenant namespaces and the tunnel); make what it waits for happen, or raise its timeouts and this one's",
			time.Since(start).Round(time.Second), a, b, op, l.holder(), ctx.Err())
	}
}

// holder says which operation holds the lock, since when, and what it waits for.
func (l *pairLock) holder() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.since.IsZero() {
		return "the operation holding it had not said what it is"
	}
	waiting := "between two of its steps"
	if l.waiting != "" {
		waiting = "waiting for " + l.waiting
	}
	return fmt.Sprintf("the %s of the %s has held it since %s (%s), %s", l.op, l.of, l.since.Format(time.TimeOnly),
		time.Since(l.since).Round(time.Second), waiting)
}
