package pods

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/remap"
)

// addresses is how the consumer sees the provider's networks, from the Configurations of the
// virtual node's tenant namespace: when the provider's pod CIDR overlaps one of the consumer's,
// the consumer reaches the provider's pods under a remapped CIDR, and the status of an
// offloaded pod carries that address (as upstream Liqo's virtual kubelet does), so that what
// reads it (kubectl, the EndpointSlices of the Services selecting the pod) gets an address the
// consumer reaches through the tunnel.
type addresses struct {
	mu     sync.RWMutex
	remaps []remap.Remap
}

// localize rewrites the pod IPs of st, the provider's view, into the consumer's.
func (a *addresses) localize(st *corev1.PodStatus) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if len(a.remaps) == 0 {
		return
	}
	st.PodIP = remap.Local(st.PodIP, a.remaps)
	for i := range st.PodIPs {
		st.PodIPs[i].IP = remap.Local(st.PodIPs[i].IP, a.remaps)
	}
}

// set replaces the remaps; it tells whether they changed.
func (a *addresses) set(remaps []remap.Remap) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	changed := fmt.Sprint(a.remaps) != fmt.Sprint(remaps)
	a.remaps = remaps
	return changed
}

// watchAddresses follows the Configurations of the tenant namespace (c: networking.liqo.io on
// the consumer) and, when the remapped networks change, reconciles every pod of the node so
// that their statuses carry the new addresses. Until the first list answers, addresses are the
// provider's own.
func (rf *reflection) watchAddresses(ctx context.Context, c rest.Interface) {
	inf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(c, "configurations", rf.env.TenantNamespace, fields.Everything()),
		&netv1beta1.Configuration{}, 0, cache.Indexers{})
	_ = inf.SetTransform(stripManagedFields) // only fails once started
	changed := func(any) {
		var all []remap.Remap
		for _, obj := range inf.GetStore().List() {
			conf, ok := obj.(*netv1beta1.Configuration)
			if !ok {
				continue
			}
			remaps, err := remap.FromConfiguration(conf)
			if err != nil {
				rf.log.Error(err, "reading the remapped networks; pod addresses stay the provider's for this Configuration")
				continue
			}
			all = append(all, remaps...)
		}
		if rf.addrs.set(all) {
			rf.log.Info("remapped networks changed: reconciling the pods' addresses", "remaps", fmt.Sprint(all))
			for _, key := range rf.podIndex.ListKeys() {
				rf.queue.Add(key)
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: changed, UpdateFunc: func(_, o any) { changed(o) }, DeleteFunc: changed,
	}); err != nil {
		rf.log.Error(err, "watching the Configurations of the tenant namespace", "namespace", rf.env.TenantNamespace)
		return
	}
	go inf.RunWithContext(ctx)
}
