package pods

// The provider's Warning Events about the node's ShadowPods (why it does not create or run
// their pods), watched: one watch per remote namespace, where a pod the provider has not
// created used to cost one Event LIST every notCreatedWait (at 10,000 pending pods, a thousand
// LISTs a second, each reading every Event of the namespace).

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
)

// shadowPodIndex indexes the watched Events by the name of the ShadowPod they are about.
const shadowPodIndex = "shadowpod"

// warningsSelector selects the Warning Events about ShadowPods.
var warningsSelector = fields.Set{"involvedObject.kind": "ShadowPod", "type": corev1.EventTypeWarning}.AsSelector().String()

// watchWarnings starts the watch of the Warning Events about ShadowPods in n's remote namespace;
// an Event about one of the node's ShadowPods reconciles its local pod. It is not part of
// n.synced: until it is, latestWarning lists instead.
func (rf *reflection) watchWarnings(ctx context.Context, n *remoteNamespace) cache.SharedIndexInformer {
	tweak := func(o *metav1.ListOptions) { o.FieldSelector = warningsSelector }
	inf := cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(rf.remote.CoreV1().RESTClient(), "events", n.remote, tweak),
		&corev1.Event{}, 0, cache.Indexers{shadowPodIndex: func(obj any) ([]string, error) {
			if ev, ok := obj.(*corev1.Event); ok {
				return []string{ev.InvolvedObject.Name}, nil
			}
			return nil, nil
		}})
	_ = inf.SetTransform(stripManagedFields) // only fails once started
	if _, err := inf.AddEventHandler(rf.handler(func(obj metav1.Object) (string, bool) {
		ev, ok := obj.(*corev1.Event)
		if !ok {
			return "", false
		}
		// Another virtual node's ShadowPod in the same namespace is not this reflector's.
		_, mine, _ := n.shadows.GetStore().GetByKey(n.remote + "/" + ev.InvolvedObject.Name)
		return n.local + "/" + ev.InvolvedObject.Name, mine
	})); err != nil {
		rf.log.Error(err, "watching the provider's Warning Events", "namespace", n.remote)
	}
	go inf.RunWithContext(ctx)
	return inf
}

// latestWarning is the provider's latest Warning Event about ShadowPod sp (nil: none). watched
// says it comes from the watch, which reconciles the pod again at the next such Event; otherwise
// (the watch not synced yet) it was listed.
func (rf *reflection) latestWarning(ctx context.Context, sp *offv1beta1.ShadowPod) (last *corev1.Event, watched bool, err error) {
	var evs []*corev1.Event
	if inf := rf.warningsOf(sp.Namespace); inf != nil && inf.HasSynced() {
		objs, err := inf.GetIndexer().ByIndex(shadowPodIndex, sp.Name)
		if err != nil {
			return nil, false, fmt.Errorf("reading the cached Events of ShadowPod %s/%s: %w", sp.Namespace, sp.Name, err)
		}
		for _, o := range objs {
			evs = append(evs, o.(*corev1.Event))
		}
		watched = true
	} else {
		list, err := rf.remote.CoreV1().Events(sp.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.kind": "ShadowPod", "involvedObject.name": sp.Name}.AsSelector().String()})
		if err != nil {
			return nil, false, fmt.Errorf("reading the Events of ShadowPod %s/%s on provider %s: %w", sp.Namespace, sp.Name, rf.env.ProviderID, err)
		}
		for i := range list.Items {
			evs = append(evs, &list.Items[i])
		}
	}
	for _, ev := range evs {
		if ev.Type == corev1.EventTypeWarning && ev.InvolvedObject.UID == sp.UID && (last == nil || eventTime(ev).After(eventTime(last))) {
			last = ev
		}
	}
	return last, watched, nil
}

// warningsOf is the Warning Event watch of the remote namespace remote (nil: not watched).
func (rf *reflection) warningsOf(remote string) cache.SharedIndexInformer {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	for _, n := range rf.remotes {
		if n.remote == remote {
			return n.warnings
		}
	}
	return nil
}
