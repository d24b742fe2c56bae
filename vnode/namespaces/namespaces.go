// Package namespaces tells a virtual node which local namespaces are offloaded to its provider
// and under which remote name: it follows the consumer's NamespaceMaps for that provider
// (desired in spec, confirmed by the provider in status) and notifies subscribers of changes.
package namespaces

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Change is one local namespace starting or ending its offloading to the provider.
type Change struct {
	// Local is the consumer's namespace.
	Local string
	// Remote is its namespace on the provider.
	Remote string
	// Offloaded is true when the mapping starts (or its remote name changed), false when it ends.
	Offloaded bool
}

// Mapper follows the namespace mappings of one provider.
type Mapper struct {
	provider corev1beta1.ClusterID

	notify  sync.Mutex // serialises notifications, so subscribers see changes in order
	mu      sync.Mutex
	current map[string]string // local -> remote, Accepted by the provider
	subs    []func(Change)
}

// Static returns a Mapper with fixed mappings (local -> remote), for callers that manage
// mappings themselves and for unit tests of reflectors.
func Static(mapping map[string]string) *Mapper {
	m := &Mapper{current: map[string]string{}}
	for l, r := range mapping {
		m.current[l] = r
	}
	return m
}

// Start follows the NamespaceMaps labelled with provider's cluster ID in tenantNamespace of
// the consumer cluster reached with local. It returns once the first listing is known; the
// Mapper then keeps following them until ctx ends.
func Start(ctx context.Context, local *rest.Config, tenantNamespace string, provider corev1beta1.ClusterID) (*Mapper, error) {
	scheme, err := api.NewScheme()
	if err != nil {
		return nil, fmt.Errorf("namespace mapper: %w", err)
	}
	c, err := cache.New(local, cache.Options{Scheme: scheme,
		DefaultNamespaces:    map[string]cache.Config{tenantNamespace: {}},
		DefaultLabelSelector: labelsSelector(provider)})
	if err != nil {
		return nil, fmt.Errorf("watching the NamespaceMaps of %s in %s: %w", provider, tenantNamespace, err)
	}
	m := &Mapper{provider: provider, current: map[string]string{}}
	inf, err := c.GetInformer(ctx, &offv1beta1.NamespaceMap{})
	if err != nil {
		return nil, fmt.Errorf("watching the NamespaceMaps of %s in %s: %w", provider, tenantNamespace, err)
	}
	resync := func(any) { m.recompute(ctx, c) }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: resync, UpdateFunc: func(_, o any) { resync(o) }, DeleteFunc: resync,
	}); err != nil {
		return nil, fmt.Errorf("watching the NamespaceMaps of %s: %w", provider, err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("listing the NamespaceMaps of %s in %s: %w", provider, tenantNamespace, ctx.Err())
	}
	m.recompute(ctx, c)
	return m, nil
}

// labelsSelector selects the NamespaceMaps of one provider.
func labelsSelector(provider corev1beta1.ClusterID) labels.Selector {
	return labels.SelectorFromSet(labels.Set{consts.RemoteClusterIDLabel: string(provider)})
}

// recompute reads every map of the provider and notifies the differences.
func (m *Mapper) recompute(ctx context.Context, r client.Reader) {
	m.notify.Lock()
	defer m.notify.Unlock()
	maps := &offv1beta1.NamespaceMapList{}
	if err := r.List(ctx, maps); err != nil {
		return // the cache is stopping
	}
	next := map[string]string{}
	for _, nm := range maps.Items {
		for local, st := range nm.Status.CurrentMapping {
			if st.Phase != offv1beta1.MappingAccepted || st.RemoteNamespace == "" {
				continue
			}
			if _, desired := nm.Spec.DesiredMapping[local]; !desired || nm.DeletionTimestamp != nil {
				continue // being withdrawn: stop reflecting before the remote namespace goes
			}
			next[local] = st.RemoteNamespace
		}
	}
	m.mu.Lock()
	var changes []Change
	for l, r := range m.current {
		if nr, ok := next[l]; !ok || nr != r {
			changes = append(changes, Change{Local: l, Remote: r, Offloaded: false})
		}
	}
	for l, r := range next {
		if or, ok := m.current[l]; !ok || or != r {
			changes = append(changes, Change{Local: l, Remote: r, Offloaded: true})
		}
	}
	m.current = next
	subs := append([]func(Change){}, m.subs...)
	m.mu.Unlock()
	sort.Slice(changes, func(i, j int) bool { // ends before starts, then by name
		if changes[i].Offloaded != changes[j].Offloaded {
			return !changes[i].Offloaded
		}
		return changes[i].Local < changes[j].Local
	})
	for _, c := range changes {
		for _, s := range subs {
			s(c)
		}
	}
}

// Remote returns the provider's namespace for a local namespace, if it is offloaded there.
func (m *Mapper) Remote(local string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.current[local]
	return r, ok
}

// Local returns the consumer's namespace a remote namespace stands for.
func (m *Mapper) Local(remote string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for l, r := range m.current {
		if r == remote {
			return l, true
		}
	}
	return "", false
}

// All returns the current mappings, local -> remote.
func (m *Mapper) All() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.current))
	for l, r := range m.current {
		out[l] = r
	}
	return out
}

// Subscribe calls f for every later change, and at once with an Offloaded change for each
// current mapping, so a subscriber never misses one. f must not block for long.
func (m *Mapper) Subscribe(f func(Change)) {
	m.notify.Lock()
	defer m.notify.Unlock()
	m.mu.Lock()
	m.subs = append(m.subs, f)
	now := make([]Change, 0, len(m.current))
	for l, r := range m.current {
		now = append(now, Change{Local: l, Remote: r, Offloaded: true})
	}
	m.mu.Unlock()
	sort.Slice(now, func(i, j int) bool { return now[i].Local < now[j].Local })
	for _, c := range now {
		f(c)
	}
}

// Set changes one mapping of a Static mapper (remote "" ends it) and notifies subscribers.
func (m *Mapper) Set(local, remote string) {
	m.notify.Lock()
	defer m.notify.Unlock()
	m.mu.Lock()
	old, had := m.current[local]
	if remote == "" {
		delete(m.current, local)
	} else {
		m.current[local] = remote
	}
	subs := append([]func(Change){}, m.subs...)
	m.mu.Unlock()
	if had && old != remote {
		for _, s := range subs {
			s(Change{Local: local, Remote: old, Offloaded: false})
		}
	}
	if remote != "" && old != remote {
		for _, s := range subs {
			s(Change{Local: local, Remote: remote, Offloaded: true})
		}
	}
}
